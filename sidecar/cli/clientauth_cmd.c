/* clientauth_cmd.c — `onionfront client-auth add|list|remove` (see clientauth_cmd.h). */
#include "sidecar/cli/clientauth_cmd.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "sidecar/identity/addrbook.h"
#include "sidecar/identity/clientauth.h"
#include "sidecar/config/config.h"
#include "sidecar/config/config_value.h"
#include "sidecar/core/onion_address.h"
#include "sidecar/identity/keys.h"
#include "sidecar/identity/probeauth.h"

/* The config and `service` in it; NULL with the reason printed on `errf`. */
static const struct service_conf *clientauth_cmd_service(const char *cmd, const char *config_path,
                                                         const char *service, struct config **conf, FILE *errf)
{
    char err[2048];
    if (!(*conf = config_load_file(config_path, err, sizeof(err)))) {
        fprintf(errf, "client-auth %s: %s: %s\n", cmd, config_path, err);
        return NULL;
    }
    const struct service_conf *sc = config_find_service(*conf, service);
    if (!sc)
        fprintf(errf, "client-auth %s: no service named \"%s\" in %s\n", cmd, service, config_path);
    return sc;
}

/* `service`'s recorded address (addrbook.h) into `address`; -1 with the reason printed. */
static int clientauth_cmd_address(const struct config *conf, const char *service, char address[ONION_ADDRESS_SIZE],
                                  FILE *errf)
{
    char err[1024];
    struct addrbook *book = addrbook_load(conf->state_dir, err, sizeof(err));
    const char *a = book ? addrbook_address(book, service) : NULL;
    if (a)
        snprintf(address, ONION_ADDRESS_SIZE, "%s", a);
    else if (book)
        fprintf(errf, "client-auth add: service %s has no address yet: start onionfront with it once (or run "
                "onionfront new-key %s), then add its clients\n", service, service);
    else
        fprintf(errf, "client-auth add: %s\n", err);
    addrbook_free(book);
    return a ? 0 : -1;
}

/* The config entry of client `name` with `public_key`, exactly as the operator pastes it or looks for it. */
static void clientauth_cmd_entry(FILE *out, const char *name, const char *public_key)
{
    fprintf(out, "{ \"name\": \"%s\", \"public_key\": \"%s\" }\n", name, public_key);
}

int clientauth_cmd_add(const char *config_path, const char *service, const char *name, FILE *out, FILE *errf)
{
    struct config *conf = NULL;
    char address[ONION_ADDRESS_SIZE], pub[53], priv[53];
    const struct service_conf *sc = clientauth_cmd_service("add", config_path, service, &conf, errf);
    int rc = 1;
    if (!sc)
        goto done;
    if (!config_is_service_name(name, strlen(name))) {
        fprintf(errf, "client-auth add: client name \"%s\" must be " CONFIG_SERVICE_NAME_RULE "\n", name);
        goto done;
    }
    if (strcmp(name, CONFIG_PROBE_CLIENT_NAME) == 0) {
        fprintf(errf, "client-auth add: \"%s\" is onionfront's own probe client: choose another name\n", name);
        goto done;
    }
    for (size_t i = 0; i < sc->n_clients; i++)
        if (strcmp(sc->clients[i].name, name) == 0) {
            fprintf(errf, "client-auth add: service %s already has a client named \"%s\" (remove it from "
                    "services.client_auth first to give it a new key)\n", service, name);
            goto done;
        }
    if (clientauth_cmd_address(conf, service, address, errf) < 0)
        goto done;
    if (clientauth_keypair(pub, priv) < 0) {
        fprintf(errf, "client-auth add: OpenSSL could not make an x25519 key pair\n");
        goto done;
    }
    fprintf(out,
            "# Client \"%s\" of service %s (%s.onion). Its private key, shown only now: give the client this\n"
            "# line, for a file ending in .auth_private in its tor's ClientOnionAuthDir (or for Tor Browser):\n"
            "%s:descriptor:x25519:%s\n"
            "# Then add this entry to the service's \"client_auth\" in %s and reload onionfront:\n",
            name, service, address, address, priv, config_path);
    OPENSSL_cleanse(priv, sizeof(priv));
    clientauth_cmd_entry(out, name, pub);
    rc = fflush(out) == 0 ? 0 : 1;
done:
    config_free(conf);
    return rc;
}

int clientauth_cmd_list(const char *config_path, const char *service, FILE *out, FILE *errf)
{
    struct config *conf = NULL;
    char err[2048];
    const struct service_conf *sc = clientauth_cmd_service("list", config_path, service, &conf, errf);
    if (!sc) {
        config_free(conf);
        return 1;
    }
    int rc = 0;
    if (sc->n_clients == 0)
        fprintf(out, "service %s: no client authorization (anyone with the address can connect)\n", service);
    else
        fprintf(out, "service %s: %zu client%s\n", service, sc->n_clients, sc->n_clients == 1 ? "" : "s");
    for (size_t i = 0; i < sc->n_clients; i++)
        fprintf(out, "  %-32s descriptor:x25519:%s\n", sc->clients[i].name, sc->clients[i].public_key);
    char address[ONION_ADDRESS_SIZE], dir[CONFIG_PATH_MAX + sizeof(CLIENTAUTH_DIR) + 2];
    struct stat st;
    struct client_auth_conf pbuf;
    const struct client_auth_conf *probe = NULL;
    snprintf(dir, sizeof(dir), "%s/%s", sc->key_dir, CLIENTAUTH_DIR);
    if (keys_inspect_mode(sc->key_dir, sc->mode, address, err, sizeof(err)) == 0) {
        /* before the first start there is nothing to disagree with */
        if (sc->n_clients > 0)
            fprintf(out, "service %s has not been started yet: onionfront writes these clients' files into %s at "
                    "its first start\n", service, dir);
    } else if (sc->n_clients > 0 && lstat(dir, &st) < 0 && errno == ENOENT) {
        fprintf(errf, "client-auth list: %s does not exist yet: the clients above are in the config but not given "
                "to tor; reload onionfront to write their files\n", dir);
        rc = 1;
    } else if (probeauth_for_service(conf, sc, false, &pbuf, &probe, err, sizeof(err)) < 0 ||
               clientauth_check_dir(sc, sc->key_dir, probe, err, sizeof(err)) < 0) {
        fprintf(errf, "client-auth list: %s/%s does not agree with the config: %s\n", sc->key_dir, CLIENTAUTH_DIR,
                err);
        rc = 1;
    }
    config_free(conf);
    return rc;
}

int clientauth_cmd_remove(const char *config_path, const char *service, const char *name, FILE *out, FILE *errf)
{
    struct config *conf = NULL;
    const struct service_conf *sc = clientauth_cmd_service("remove", config_path, service, &conf, errf);
    const struct client_auth_conf *cl = NULL;
    int rc = 1;
    if (!sc)
        goto done;
    for (size_t i = 0; i < sc->n_clients && !cl; i++)
        if (strcmp(sc->clients[i].name, name) == 0)
            cl = &sc->clients[i];
    if (!cl) {
        fprintf(errf, "client-auth remove: service %s has no client named \"%s\" in %s (`client-auth list %s` "
                "shows its clients; if you took it out of client_auth already, reload onionfront to remove its "
                "file)\n", service, name, config_path, service);
        goto done;
    }
    fprintf(out, "# To remove client \"%s\" of service %s, delete this entry from the service's \"client_auth\" "
            "in %s:\n", name, service, config_path);
    clientauth_cmd_entry(out, cl->name, cl->public_key);
    if (sc->n_clients == 1) /* never fail open: say what the last one's removal does (clientauth.h) */
        fprintf(out,
                "# It is the service's last client. onionfront refuses a config that lists no clients for a\n"
                "# service it restricted (the service is taken off tor, not published for everyone). To keep the\n"
                "# service restricted, add another client first (client-auth add %s NAME). To make it public on\n"
                "# purpose, replace \"client_auth\" by \"drop_client_auth\": true.\n",
                service);
    fprintf(out,
            "# Then reload onionfront. It deletes\n"
            "#   %s/%s/%s.auth\n"
            "# and tor publishes a descriptor this client's key no longer opens. A client tor that fetched the\n"
            "# descriptor before keeps its copy, and can still connect, until tor replaces the service's\n"
            "# introduction points (18-24 hours): restart it (onionfront restart-tor) to cut the client off now.\n",
            sc->key_dir, CLIENTAUTH_DIR, name);
    rc = fflush(out) == 0 ? 0 : 1;
done:
    config_free(conf);
    return rc;
}
