/* service_mode.h — what kind of onion service a service is, as a name of its own: the key directory
 * (keys.h) needs it to apply the anonymity rule and must not depend on the whole configuration for it.
 * The JSON spelling and the stringer stay with the parser (config.h: service_mode_str). */
#ifndef ONIONFRONT_SERVICE_MODE_H
#define ONIONFRONT_SERVICE_MODE_H

/* What kind of onion service a service is (its "mode"); fixed for its key's life (service_id.h). */
enum service_mode {
    SERVICE_MODE_SINGLE,    /* a single onion service: one-hop introduction and rendezvous, not hidden */
    SERVICE_MODE_ANONYMOUS, /* an ordinary (location-hidden) onion service, on its own tor (workerset.h) */
};

#endif
