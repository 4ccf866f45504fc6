// PostGraphile 5 as `cargo bench-tool postgraphile` runs it (examples/bench/benchmarks/postgraphile.rs):
// the Amber preset (PostGraphile's recommended defaults) over the `public` schema of
// $DATABASE_URL, served on 127.0.0.1:$PORT, set up for production (no GraphiQL, no schema
// watching, no plan explanations in responses).
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { makePgService } from "postgraphile/adaptors/pg";

export default {
  extends: [PostGraphileAmberPreset],
  pgServices: [
    makePgService({
      connectionString: process.env.DATABASE_URL,
      schemas: ["public"],
    }),
  ],
  grafserv: {
    host: "127.0.0.1",
    port: Number(process.env.PORT),
    graphiql: false,
    watch: false,
  },
  grafast: { explain: false },
};
