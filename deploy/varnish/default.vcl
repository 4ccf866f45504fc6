# Varnish in front of dynapage: keeps what the server says a shared cache may keep, and drops
# it when `dynapage serve|sync|lambda-sync --purge-url http://<varnish>/ --purge-format varnish`
# purges the products a change touched (vmod xkey, from Debian's varnish-modules).
#
#   varnishd -a :6081 -f /etc/varnish/default.vcl -s malloc,256m
#
# Set the backend below to the server's address. What may be kept is decided by the server
# (docs/api/caching.md): only `Cache-Control: public` responses, which are the
# error-free anonymous GETs; anything with `Authorization` is passed and never stored.
vcl 4.1;

import xkey;

backend dynapage {
    .host = "127.0.0.1";
    .port = "8080";
}

# Who may purge: the processes that apply changes to the index. Widen it to their network.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(403, "Forbidden"));
        }
        if (!req.http.xkey-purge) {
            return (synth(400, "xkey-purge header required"));
        }
        set req.http.purged = xkey.purge(req.http.xkey-purge);
        return (synth(200, "Purged " + req.http.purged));
    }
    # A viewer's request is answered for that viewer: never from the cache, never into it.
    if (req.http.Authorization) {
        return (pass);
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    # The server answers the same to every anonymous client; cookies change nothing.
    unset req.http.Cookie;
    return (hash);
}

sub vcl_backend_response {
    # Only what the server calls `public` is kept (its `max-age`, `stale-while-revalidate`
    # and `Vary` are obeyed as Varnish does by default).
    if (beresp.http.Cache-Control !~ "(^|[ ,])public([ ,]|$)") {
        set beresp.uncacheable = true;
        set beresp.ttl = 120s;
        return (deliver);
    }
    # xkey reads its keys from `xkey`; the server names them in `Surrogate-Key`.
    if (beresp.http.Surrogate-Key) {
        set beresp.http.xkey = beresp.http.Surrogate-Key;
    }
}

sub vcl_deliver {
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
    unset resp.http.xkey;
}
