/* ob_config.h — a service's Onionbalance role (the service's "onionbalance" object) and the texts
 * onionfront gives Debian's Onionbalance 0.2.2 and tor for it: the instance's `ob_config` file and the
 * frontend's `config.yaml`, plus the parser of Onionbalance's status-socket JSON.
 *
 * Two roles (docs/configuration.md, "services[].onionbalance"):
 *   - instance: the service, with its own key, runs on onionfront's tors as an instance of the master
 *     address `master_address`: tor gets `HiddenServiceOnionBalanceInstance 1` in the service's group and
 *     reads `MasterOnionAddress <master>.onion` from <HiddenServiceDir>/ob_config while parsing the
 *     config (without the file SETCONF answers 513) — ob_instance.h writes it;
 *   - frontend: the service's own key is the master key; onionfront runs Onionbalance for it, merging the
 *     listed `instances` and this config's instance services of that master (ob_frontend.h).
 * Limits, checked here at load: at most OB_MAX_INSTANCES instances (tor clients refuse descriptors with
 * more than 20 intro points, Onionbalance takes 2 per instance and caps descriptors at 50 kB), no PoW on
 * a frontend (Onionbalance 0.2.2 drops pow-params from the merged descriptor).
 *
 * Pure: no I/O, no logging; errors go to the caller's buffer naming the field. */
#ifndef ONIONFRONT_OB_CONFIG_H
#define ONIONFRONT_OB_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>


#define OB_MAX_INSTANCES 8
#define OB_ADDRESS_LEN 56 /* a v3 address without ".onion" */
#define OB_CONFIG_FILE "ob_config"
#define OB_DEFAULT_PUBLISH_DEADLINE 5400 /* s: descriptors live 60 min, publishing is checked every 5 */
#define OB_STATUS_MAX (64 * 1024)        /* the largest status document read */

enum ob_role {
    OB_ROLE_NONE,     /* a plain service */
    OB_ROLE_INSTANCE, /* an Onionbalance instance of master_address */
    OB_ROLE_FRONTEND, /* the master: onionfront runs Onionbalance for it */
};

struct ob_conf {
    enum ob_role role;
    char master_address[OB_ADDRESS_LEN + 1];                   /* instance: lowercase, no ".onion" */
    char instances[OB_MAX_INSTANCES][OB_ADDRESS_LEN + 1];      /* frontend: remote instances, likewise */
    size_t n_instances;                                        /* frontend: 0-OB_MAX_INSTANCES */
    bool testnet;           /* frontend: run Onionbalance with --is-testnet (private test networks only) */
    unsigned publish_deadline; /* frontend: seconds without a confirmed master upload before Onionbalance
                                  counts as stalled and is restarted, 60-86400 */
};

/* Parse the service's "onionbalance" value `o` (NULL: no role) at field path `path`
 * ("services[0].onionbalance") into *out. `pow_enabled` is the service's parsed dos.pow.enabled (PoW is
 * refused on a frontend). Return 0, or -1 with "<path>.<field>: why" in `err`. */
int ob_conf_parse(json_t *o, const char *path, bool pow_enabled, struct ob_conf *out, char *err,
                  size_t errlen);

bool ob_conf_equal(const struct ob_conf *a, const struct ob_conf *b);

const char *ob_role_str(enum ob_role r);

/* Is `s` (`len` bytes) a v3 onion address, with or without ".onion", any case, with a valid checksum and
 * version? If so and `out` is not NULL, write it lowercase without ".onion" (OB_ADDRESS_LEN + 1 bytes). */
bool ob_address_parse(const char *s, size_t len, char *out);

/* The content of an instance's ob_config file for `master` (no ".onion"): "MasterOnionAddress
 * <master>.onion\n". Return its length, or -1 if it does not fit `len`. */
int ob_instance_file_text(const char *master, char *out, size_t len);

/* Onionbalance's config.yaml for one master: `key_path` (absolute, plain characters only: checked) and
 * the instance addresses (validated, no ".onion"; 1-OB_MAX_INSTANCES). Return a new string, or NULL with
 * a message. */
char *ob_yaml_render(const char *key_path, const char (*instances)[OB_ADDRESS_LEN + 1], size_t n, char *err,
                     size_t errlen);

/* What Onionbalance's status socket said about one master. */
struct ob_status_instance {
    char address[OB_ADDRESS_LEN + 1];
    bool received;    /* a descriptor of this instance was received */
    int intro_points; /* in its last descriptor, -1 unknown */
    char received_at[32]; /* when that descriptor was received, Onionbalance's "YYYY-MM-DD HH:MM:SS" (UTC) */
};
struct ob_status {
    bool attempted;   /* a publish attempt of either descriptor is recorded */
    char attempt_first[32], attempt_second[32]; /* Onionbalance's UTC stamps (as received_at), "" if none */
    struct ob_status_instance instances[OB_MAX_INSTANCES * 2];
    size_t n_instances;
};

/* Parse one status document (`len` bytes of JSON) for the service `master` (no ".onion"). Return 0, or -1
 * with why in `err` (not JSON, wrong shape, master not listed, an instance's introPointsNum other than
 * absent, null or an integer 0-20, naming the field). Unknown fields are ignored. */
int ob_status_parse(const char *json, size_t len, const char *master, struct ob_status *out, char *err,
                    size_t errlen);

#endif
