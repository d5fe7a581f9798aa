/* proxybench.c — a bench-only harness: onionfront's data path (sidecar/datapath/proxy.c with its backend pool) on
 * its own event loop, without tor, so tests/bench/run.sh (part B) can drive the unix socket that tor would
 * connect to and compare it with HAProxy and a direct connection.
 *
 *   proxybench DIR BACKEND [BALANCE]
 *
 * Creates DIR (0700) if needed, loads a config (state_dir DIR/state, run_dir DIR/run, one service "bench", port 80, one backend
 * BACKEND, health checks "none" so no checker is needed, balance BALANCE or round_robin) through
 * config_load_string, exactly as the daemon would, creates the proxy (proxy_new) and prints
 * "ready unix:<socket>" once it listens. Like tor's streams, each connection must start with the PROXY v1
 * line of HiddenServiceExportCircuitID haproxy. Runs until SIGTERM/SIGINT, then frees everything.
 *
 * Owns nothing of the daemon; the daemon's own wiring (main.c: tor, health checkers, status, metrics) is
 * left out on purpose: only the per-stream work is measured. */
#include <event2/event.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sidecar/config/config.h"
#include "sidecar/config/service_socket.h"
#include "sidecar/core/log.h"
#include "sidecar/datapath/proxy.h"

static void proxybench_stop_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: proxybench DIR BACKEND [BALANCE]\n");
        return 2;
    }
    char json[2048], err[512], path[256];
    int n = snprintf(json, sizeof(json),
                     "{\"state_dir\": \"%s/state\", \"run_dir\": \"%s/run\", \"log_level\": \"warn\","
                     " \"services\": [{\"name\": \"bench\", \"ports\": [{\"virtual\": 80,"
                     " \"backends\": [{\"name\": \"b0\", \"address\": \"%s\"}],"
                     " \"balance\": \"%s\", \"health\": {\"type\": \"none\"}}]}]}",
                     argv[1], argv[1], argv[2], argc > 3 ? argv[3] : "round_robin");
    if (n < 0 || (size_t)n >= sizeof(json)) {
        fprintf(stderr, "proxybench: arguments too long\n");
        return 2;
    }
    if (mkdir(argv[1], 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "proxybench: mkdir %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    struct config *conf = config_load_string(json, (size_t)n, err, sizeof(err));
    if (!conf) {
        fprintf(stderr, "proxybench: config: %s\n", err);
        return 1;
    }
    log_set_level(LOG_LVL_WARN);
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    struct event *st = evsignal_new(base, SIGTERM, proxybench_stop_cb, base);
    struct event *si = evsignal_new(base, SIGINT, proxybench_stop_cb, base);
    event_add(st, NULL);
    event_add(si, NULL);
    int rc = 1;
    struct proxy *px = proxy_new(base, conf, NULL, err, sizeof(err));
    if (!px) {
        fprintf(stderr, "proxybench: proxy: %s\n", err);
    } else if (service_socket_path(conf->run_dir, "bench", 80, path, sizeof(path)) < 0) {
        fprintf(stderr, "proxybench: socket path too long\n");
    } else {
        printf("ready unix:%s\n", path);
        fflush(stdout);
        event_base_dispatch(base);
        rc = 0;
    }
    proxy_free(px);
    event_free(st);
    event_free(si);
    event_base_free(base);
    config_free(conf);
    return rc;
}
