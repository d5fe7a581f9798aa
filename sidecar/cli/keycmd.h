/* keycmd.h — the key commands of the command line: `onionfront new-key SERVICE`, `export-key SERVICE FILE`
 * and `import-key SERVICE FILE|DIR`. They work offline on the state directory (the keys and the address
 * record, addrbook.h) and never talk to a running daemon: a running onionfront publishes what they
 * changed at its next reload (SIGHUP, or `onionfront status reload`), and the record says the change
 * was made on purpose, so the reload takes it instead of refusing the service.
 *
 * new-key and import-key also work before the first start: as root they make a missing state directory
 * as the systemd unit would (its StateDirectory= for its User=) and then write as the state directory's
 * owner; as another user that cannot make it, they print the one command that does.
 *
 * Owns the commands' flow and messages only; keys.c owns the key formats, addrbook.c the record. Each
 * function loads the config at `config_path`, prints its result on `out` and errors on `errf`, and
 * returns the process exit status (0, or 1 with the reason printed). Key bytes are never printed. */
#ifndef ONIONFRONT_KEYCMD_H
#define ONIONFRONT_KEYCMD_H

#include <stdbool.h>
#include <stdio.h>

/* Give SERVICE a new key, on purpose: the old key directory (if any) is kept, renamed to
 * "<key_dir>.replaced-<UTC time>", a new key is created in key_dir and the change (old and new address,
 * time) is put into the address record. Prints the new address. */
int keycmd_new_key(const char *config_path, const char *service, FILE *out, FILE *errf);

/* Write SERVICE's secret key to `file` in tor's own hs_ed25519_secret_key format (96 bytes), mode 0600,
 * atomically, only if `file` does not exist (never follows or replaces a symlink). `file` "-" means
 * `out`, refused if that is a terminal. Prints the address, never the key. */
int keycmd_export_key(const char *config_path, const char *service, const char *file, FILE *out, FILE *errf);

/* Make `src` SERVICE's key: a HiddenServiceDir (as tor or mkp224o leave it) or a single
 * hs_ed25519_secret_key file (as export-key writes it). Refused if key_dir holds another key. The
 * address is put into the address record as imported on purpose (a change of address if it differs). */
int keycmd_import_key(const char *config_path, const char *service, const char *src, FILE *out, FILE *errf);

/* What the operator shows about how an imported HiddenServiceDir ran (a v3 directory carries no mark of
 * its mode: keys.h, enum keys_evidence). */
struct keycmd_import_opts {
    const char *torrc; /* --torrc FILE: the torrc it ran under; must list it as a HiddenServiceDir */
    bool vouch_single; /* --i-know-it-was-a-single-onion: the operator's word that it ran as a single onion */
};

/* keycmd_import_key with that evidence. As root (the source is tor's user's, 0700) the source is read as
 * root and never changed; the copy and the record are written as the state directory's owner (the unit's
 * user for a state directory it makes before the first start). */
int keycmd_import_key_opts(const char *config_path, const char *service, const char *src,
                           const struct keycmd_import_opts *o, FILE *out, FILE *errf);

#endif
