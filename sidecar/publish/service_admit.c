/* service_admit.c — the admission window of one tor's services (see SERVICE_ADMIT_WINDOW in
 * service_int.h): which waiting services the next SETCONF of the group hands to tor. Decides and marks
 * only; service.c builds and sends the SETCONF. */
#include "sidecar/publish/service.h"
#include "sidecar/publish/service_int.h"

#include "sidecar/config/config.h"
#include "sidecar/core/clock.h"
#include "sidecar/core/log.h"
#include "sidecar/identity/service_id.h"

/* Is the admitted i-th service still in its first uploads (it holds a slot of the window)? */
static bool service_admitting(const struct service_mgr *m, size_t i, double now)
{
    const struct service *s = &m->services[i];
    bool answered = s->up_sent > 0 && s->up_answered >= s->up_sent;
    return s->admitted && !answered && now - s->admitted_at < SERVICE_ADMIT_WAIT_S;
}

/* The window's state: slots taken, services waiting to be admitted (those with PoW on apart). */
struct service_window {
    size_t busy, waiting, waiting_pow;
};

static struct service_window service_window_of(const struct service_mgr *m, double now)
{
    struct service_window win = {0};
    for (size_t i = 0; i < m->n; i++) {
        if (!service_for_tor(m, i))
            continue;
        if (m->services[i].admitted)
            win.busy += service_admitting(m, i, now);
        else if (service_id_at(m, i)->conf->dos.pow_enabled)
            win.waiting_pow++;
        else
            win.waiting++;
    }
    return win;
}

bool service_admit_due(const struct service_mgr *m, double now)
{
    struct service_window win = service_window_of(m, now);
    size_t free_slots = win.busy < SERVICE_ADMIT_WINDOW ? SERVICE_ADMIT_WINDOW - win.busy : 0;
    if (win.waiting > 0)
        return free_slots >= SERVICE_ADMIT_STEP || free_slots >= win.waiting;
    return win.waiting_pow > 0; /* the last step: every PoW service at once */
}

/* Admit waiting services into the window before a SETCONF: plain ones while slots are free, in config
 * order; the PoW ones all together once no plain one waits. Return how many still wait. */
static size_t service_admit(struct service_mgr *m)
{
    double now = (double)clock_now_ms() / 1e3;
    struct service_window win = service_window_of(m, now);
    for (int pow = 0; pow < 2; pow++)
        for (size_t i = 0; i < m->n; i++) {
            struct service *s = &m->services[i];
            if (s->admitted || !service_for_tor(m, i) || service_id_at(m, i)->conf->dos.pow_enabled != (pow == 1))
                continue;
            if (pow ? win.waiting > 0 : win.busy >= SERVICE_ADMIT_WINDOW)
                continue;
            s->admitted = true;
            s->admitted_at = now;
            s->up_sent = s->up_answered = 0;
            if (pow) {
                win.waiting_pow--;
            } else {
                win.busy++;
                win.waiting--;
            }
        }
    return win.waiting + win.waiting_pow;
}

void service_admit_and_mark(struct service_mgr *m, bool renew)
{
    size_t waiting = service_admit(m);
    if (waiting > 0 && !m->admit_said) {
        log_info("services: %zu service%s wait%s to be handed to this tor: at most %d at a time whose first "
                 "uploads are unanswered (tor drops uploads when too many start at once)",
                 waiting, waiting == 1 ? "" : "s", waiting == 1 ? "s" : "", SERVICE_ADMIT_WINDOW);
        m->admit_said = true;
    } else if (waiting == 0 && m->admit_said) {
        log_info("services: every service is handed to this tor");
        m->admit_said = false;
    }
    m->renew_armed = false;
    m->renew_waiting = 0;
    for (size_t i = 0; i < m->n; i++) {
        m->services[i].renew_pow = renew && service_in_tor(m, i) && !service_id_at(m, i)->conf->dos.pow_enabled;
        m->renew_waiting += m->services[i].renew_pow;
    }
}
