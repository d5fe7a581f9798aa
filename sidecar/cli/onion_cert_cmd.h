/* onion_cert_cmd.h — the certificate commands of the command line, with which a service proves to a
 * certificate authority that it controls its onion address (docs/https.md walks through their use):
 *
 *   onionfront onion-csr SERVICE --ca-nonce NONCE [--wildcard] [--out FILE] [--publish-address-in-ct-logs]
 *       the CA/Browser Forum onion CSR (also RFC 9799's onion-csr-01 response), PEM, on standard output
 *       or written atomically to FILE (mode 0644: it holds no secret)
 *   onionfront onion-caa SERVICE --caa RECORD [--caa RECORD ...] [--expiry SECONDS]
 *                        [--publish-address-in-ct-logs]
 *       RFC 9799's signed in-band CAA object, one line of JSON on standard output
 *
 * Like the key commands (keycmd.h) they work offline on the config and the state directory and never talk
 * to a running daemon. The key is read with keys_load_mode() (the same checks as at start-up), used once
 * and wiped; it is never printed, and the process is made undumpable with no core limit before it is read
 * (proc_protect_secrets, as the daemon). A service that is an Onionbalance instance is refused: visitors
 * and certificates use the master address, whose key only the frontend holds. A service with client
 * authorization or an anonymous one is refused unless ONION_CERT_PUBLISH_FLAG is given: certificates
 * are published in Certificate Transparency logs, and the address with them.
 *
 * Owns the commands' arguments, flow and messages only; onion_csr.h owns the documents. Each function
 * loads the config at `config_path`, takes the arguments after the command word (`argc`/`argv`), prints
 * its result on `out` and messages on `errf`, and returns the exit status: 0, 1 with the reason printed
 * (nothing written), or 2 for a usage error. */
#ifndef ONIONFRONT_ONION_CERT_CMD_H
#define ONIONFRONT_ONION_CERT_CMD_H

#include <stdio.h>
#include <time.h>

#define ONION_CERT_CMD_MAX_CAA 16 /* --caa records in one object */
/* The operator's word that a private or anonymous service's address may be published (in CT logs). */
#define ONION_CERT_PUBLISH_FLAG "--publish-address-in-ct-logs"

/* `onionfront onion-csr ...` */
int onion_cert_cmd_csr(const char *config_path, int argc, char **argv, FILE *out, FILE *errf);

/* `onionfront onion-caa ...`; the expiry is `now` + SECONDS (default and at most 8 hours). */
int onion_cert_cmd_caa(const char *config_path, int argc, char **argv, time_t now, FILE *out, FILE *errf);

#endif
