// Idle WebSockets for the memory figure of BENCHMARKS.md ("Idle sockets"): opens N graphql-transport-ws
// sockets one after another (connection_init, then one subscription each when the third argument
// is 1), answers pings, prints READY <opened> and holds them until killed.
// node --experimental-websocket bench/idle-sockets.mjs ws://127.0.0.1:PORT/graphql 2000 0|1
const [url, n, sub] = [process.argv[2], Number(process.argv[3]), process.argv[4] === '1'];
let ready = 0;
const sockets = [];
for (let i = 0; i < n; i++) {
  await new Promise((resolve) => {
    const ws = new WebSocket(url, 'graphql-transport-ws');
    ws.onopen = () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
    ws.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg.type === 'connection_ack') {
        if (sub) ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { commentEvents(sku: "IDLE") { kind edge { node { id body } } } }' } }));
        ready++; resolve();
      } else if (msg.type === 'ping') ws.send('{"type":"pong"}');
    };
    ws.onerror = (e) => { console.error('error', e.message); resolve(); };
    sockets.push(ws);
  });
}
console.log(`READY ${ready}`);
setInterval(() => {}, 1000);
