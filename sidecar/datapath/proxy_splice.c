/* proxy_splice.c — a bulk stream's move to splice(2) and back (see proxy.h: "Bulk streams"): the two
 * splice pumps of a stream (splice_pump.c: socket -> pipe -> socket in the kernel), started with the
 * callbacks the stream gives, and the way back to the bufferevents when the kernel refuses.
 *
 * A stream starts on the bufferevents (the PROXY line, the v2 header and short streams, where two pipes
 * would cost more system calls than they save) and moves to a splice pump per direction once it has
 * copied px->splice_min bytes, at a moment when every buffer of it is empty, so no byte can be
 * overtaken. A pump the kernel refuses hands the bytes in its pipe back, and the stream goes on
 * through the bufferevents.
 *
 * Owns s->pipe[], s->spliced and px->spliced. Not the stream itself (proxy_stream.c, which decides when
 * to move and receives the pumps' reports), the pumps' system calls (splice_pump.c). Calls nothing of the
 * other proxy files. */
#include "sidecar/datapath/proxy.h"
#include "sidecar/datapath/proxy_int.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <string.h>

#include "sidecar/core/log.h"
#include "sidecar/datapath/splice_pump.h"

bool proxy_stream_wants_splice(const struct proxy_stream *s)
{
    const struct proxy *px = s->port->px;
    return px->splice_on && !s->spliced && s->state == STREAM_OPEN && s->bytes_in + s->bytes_out >= px->splice_min &&
           px->spliced < px->max_spliced;
}

int proxy_splice_start(struct proxy_stream *s, const struct splice_pump_cbs *cbs)
{
    struct proxy *px = s->port->px;
    for (int from = 0; from < 2; from++) {
        struct stream_pipe *sp = &s->pipe[from];
        sp->s = s;
        sp->from = (enum stream_side)from;
        if (s->eof[from]) /* that direction is over (its EOF was passed on: nothing is buffered) */
            continue;
        sp->pump = splice_pump_new(px->base, bufferevent_getfd(s->bev[from]), bufferevent_getfd(s->bev[!from]),
                                   cbs, sp);
        if (!sp->pump) { /* no descriptor for a pipe, say: stay on the bufferevents */
            log_debug("proxy %s: stream %llu: no splice: %s", s->port->label, (unsigned long long)s->id,
                      strerror(errno));
            splice_pump_free(s->pipe[0].pump);
            s->pipe[0].pump = NULL;
            return 0;
        }
    }
    for (int i = 0; i < 2; i++)
        bufferevent_disable(s->bev[i], EV_READ | EV_WRITE);
    s->spliced = true;
    px->spliced++;
    s->port->streams_spliced++;
    for (int from = 0; from < 2; from++)
        if (s->pipe[from].pump && splice_pump_start(s->pipe[from].pump) < 0)
            return -1;
    return 0;
}

int proxy_splice_stop(struct proxy_stream *s)
{
    for (int from = 0; from < 2; from++) {
        struct stream_pipe *sp = &s->pipe[from];
        if (!sp->pump)
            continue;
        struct bufferevent *to = s->bev[!from];
        proxy_enable_write(to);
        int rc = splice_pump_take(sp->pump, bufferevent_get_output(to));
        splice_pump_free(sp->pump); /* splice_pump.h: it touches nothing after its callback */
        sp->pump = NULL;
        if (rc < 0)
            return -1;
        if (!s->eof[from])
            bufferevent_enable(s->bev[from], EV_READ);
    }
    s->spliced = false;
    s->port->px->spliced--;
    return 0;
}
