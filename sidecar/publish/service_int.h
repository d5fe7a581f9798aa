/* service_int.h — the service manager's state, private to sidecar/publish/service.c (the SETCONF of the
 * group and everything tor says back), service_admit.c (the admission window) and service_hosted.c
 * (which services this tor takes). Nothing else includes it: the rest of onionfront sees the manager
 * only through service.h. Include sidecar/publish/service.h first. */
#ifndef ONIONFRONT_SERVICE_INT_H
#define ONIONFRONT_SERVICE_INT_H

#ifndef ONIONFRONT_SERVICE_H
#error "include sidecar/publish/service.h before sidecar/publish/service_int.h"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "controlproto/cp_event.h"

struct service_conf;
struct service_id;
struct service_ids;

/* Handing many services to a tor at once makes it start every service's uploads at once (16 each: two
 * descriptors, eight HSDirs), and tor 0.4.9 then spends its CPU re-matching every waiting upload stream to
 * every new circuit; uploads left waiting past SocksTimeout or the directory stall limit are dropped with
 * no HS_DESC FAILED and no retry until the next descriptor (tests/testnet/README.md, "Many services on one
 * tor"). So services are admitted to a tor in a window: at most
 * SERVICE_ADMIT_WINDOW at a time whose first uploads tor has not all answered, each counted for at most
 * SERVICE_ADMIT_WAIT_S; more go in one SETCONF once at least SERVICE_ADMIT_STEP slots are free (or all
 * that wait fit). Services with PoW on wait for the last step and go in together, since every SETCONF
 * re-uploads each PoW service already in tor (TOR-FACTS). */
#define SERVICE_ADMIT_WINDOW 16
#define SERVICE_ADMIT_STEP 8
#define SERVICE_ADMIT_WAIT_S 60.0

/* What this tor did with one service (its identity is service_ids' entry at the same index). */
struct service {
    bool uploaded;                   /* first HS_DESC UPLOADED seen on this connection */
    unsigned uploads;
    bool in_tor;                     /* listed in tor's last GETCONF HiddenServiceOptions answer */
    unsigned reapplied;              /* times tor dropped it (a reload) and it was handed back */
    bool copy_bad;                   /* instance >= 1: its key copy is not the service's key; left out */
    bool ob_bad;                     /* its Onionbalance ob_config could not be written; left out */
    bool renew_pow;                  /* service_mgr_renew: PoW on for now (configured off), until tor
                                        uploads with it; then the configured group goes out */
    bool admitted;                   /* in this tor's window (see SERVICE_ADMIT_WINDOW): handed over */
    double admitted_at;              /* monotonic seconds */
    unsigned up_sent, up_answered;   /* HS_DESC UPLOAD, and UPLOADED or FAILED, on this connection */
};

struct service_mgr {
    const struct config *conf;
    struct service_ids *ids;   /* the services' identities, in config order (borrowed) */
    struct service *services;  /* parallel to ids */
    size_t n;
    struct cp_conn *conn;
    unsigned instance;      /* which tor (instance.h): its copies of the key directories */
    enum service_mode mode; /* this tor hosts only the services of this mode (workerset.h) */
    struct cp_info foreign; /* the attached tor's own HiddenService* lines, kept in every SETCONF */
    bool foreign_known;     /* `foreign` is this connection's answer: until then no SETCONF may be sent,
                               since it would replace (remove) the tor's own services */
    struct timespec published_at;
    /* Watching for a tor that lost our services (a reload re-reads its torrc and drops every SETCONF'd
     * service; see service_watch_*). */
    unsigned long setconfs; /* SETCONFs sent on this connection: an answer to an older check is stale */
    bool check_pending;     /* a GETCONF of the check is on its way; later triggers are covered by it */
    bool reload_seen;       /* tor reported SIGNAL RELOAD since the last check */
    bool unpublishing;      /* our services were removed on purpose: never re-apply them */
    unsigned long check_setconfs; /* `setconfs` when the pending check was sent */
    /* service_mgr_renew's first SETCONF (PoW on for services configured without it) was accepted: the next
     * HS_DESC UPLOAD of each such service is a descriptor with PoW parameters, so the configured group
     * (PoW off) makes tor upload again (service_renew_uploading). */
    bool renew_armed;
    size_t renew_waiting; /* services with renew_pow set */
    bool admit_said;      /* services wait for the window (logged once until all are in) */
};

/* ---- service_hosted.c (called by service.c and service_admit.c) ---- */

/* The i-th service's identity. */
const struct service_id *service_id_at(const struct service_mgr *m, size_t i);

/* Is the service `sc` this tor's: of its mode and, for a single onion, placed on this tor (placement.h)? */
bool service_conf_here(const struct service_mgr *m, const struct service_conf *sc);

/* Is the i-th service to be handed to tor (hosted here, not refused), admitted or not? */
bool service_for_tor(const struct service_mgr *m, size_t i);

/* Is the i-th service handed to tor: to be, and admitted (service_admit_and_mark)? */
bool service_in_tor(const struct service_mgr *m, size_t i);

/* ---- service_admit.c (called by service.c) ---- */

/* Would a SETCONF now admit a worthwhile step of waiting services (SERVICE_ADMIT_STEP)? `now`: monotonic
 * seconds. */
bool service_admit_due(const struct service_mgr *m, double now);

/* Before a SETCONF of the configured group: admit waiting services into the window (logged when some
 * wait, and when none waits any more) and mark the services a renewal turns PoW on for (`renew`), or
 * none. */
void service_admit_and_mark(struct service_mgr *m, bool renew);

#endif
