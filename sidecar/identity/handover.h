/* handover.h — which of onionfront's directories tor's User gets, when onionfront runs as root and tor
 * as another user (tor.user in spawn mode; an attached tor of another uid).
 *
 * The rule: tor's User may write only what tor itself writes — its DataDirectory, its control socket's
 * directory (spawn mode) and each service's key directory (tor's HiddenServiceDir). The directories
 * those live in (state_dir, state_dir/keys, run_dir) and the data-path socket directory run_dir/proxy
 * stay onionfront's, mode 0710 with tor's group, so tor's User can pass through them but cannot add,
 * rename or replace anything in them: not the torrc that a root-started tor reads (state_dir/torrc),
 * not the sockets onionfront binds, not the status socket.
 *
 * onionfront's other children run as tor's user too (tor.user, spawn mode; in attach mode there is none,
 * and they run as onionfront's user): its client tors (the probe's,
 * Onionbalance's: tor's User, with their DataDirectory and control directory handed over like the service
 * tor's) and Onionbalance itself (switched to that user before exec: proc_spawn_as). Onionbalance gets
 * tor's user rather than one of its own because it shares one with its tor: it authenticates to that tor
 * with the cookie the tor writes 0600 in its DataDirectory. A user of its own would need its tor to run as
 * that user too (a second account on every machine and a config field: the sysusers entry creates only
 * onionfront's own user, which runs everything unprivileged and never needs this); what it would buy is
 * that a compromised service tor could not read the master key. The master key Onionbalance needs is a
 * copy owned by tor's user, mode 0600, in <state_dir>/ob/: that directory stays onionfront's (a passage,
 * 0710 with tor's group), so tor's user can read the copy but cannot plant or swap anything where root
 * writes it (written atomically, its owner set through the descriptor before the key is in it). Keeping
 * the key root-only is not possible (Onionbalance reads it as tor's user), and the copy exposes nothing
 * that running Onionbalance does not: whatever runs it can read the key from its memory. The price: tor's
 * user, which the service tors run as, can read the master key (it owns this machine's instance keys
 * already).
 *
 * Owns that policy only; fsutil.c does the changes (by descriptor or without following symlinks) and
 * keys.c the keys. Never logs: errors go to the caller's buffer, naming the path. */
#ifndef ONIONFRONT_HANDOVER_H
#define ONIONFRONT_HANDOVER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct config;
struct service_conf;

/* Which user tor runs as when it is not onionfront's own: tor.user in spawn mode; in attach mode
 * `attached_uid` (the attached tor's uid from its control socket's peer credentials, tor_sup_uid; -1 while
 * unknown) when it is not root. Return 1 with
 * uid/gid, 0 if there is nothing to hand over (no other user, or onionfront is not root in attach
 * mode), -1 with a message (tor.user without root, an unknown user). */
int handover_tor_owner(const struct config *c, long attached_uid, uid_t *uid, gid_t *gid, char *err,
                       size_t errlen);

/* Apply the rule above for `c`: create the directories if needed, make the passage directories this
 * user's with tor's group and mode 0710, and give tor's own directories (with all they hold) and every
 * service's key directory to tor's user — creating a key that does not exist yet for a service the
 * address record does not know (service_id_prepare_key; a refused service is not handed over), so a service
 * added by a reload is tor's before tor hears of it. A layout from an older onionfront, which gave state_dir
 * itself to tor's user, is taken back. Return 0 (also when there is nothing to hand over), or -1 with
 * a message. */
int handover_apply(const struct config *c, long attached_uid, char *err, size_t errlen);

/* The same for spawned tor instance k >= 1 (instance.h; nothing for 0 or in attach mode), after
 * handover_apply: copy each service's key (not a refused one) into the instance's key directory, then,
 * when tor runs as another user, make state_dir/instances, the instance's directory and its keys/
 * passages and give that user its DataDirectory, control directory and key copies. Return 0, or -1 with
 * a message. */
int handover_apply_instance(const struct config *c, unsigned k, char *err, size_t errlen);

/* The same for a client tor of onionfront's (the probe's, Onionbalance's; tor.h), before it starts: when
 * tor runs as another user (tor.user), make state_dir and run_dir passages as above and give that user the
 * client tor's control directory `control_dir` (the directory only) and its DataDirectory `data_dir` with
 * all it holds (created if missing). Return 0 (also when there is nothing to hand over), or -1 with a
 * message. */
int handover_apply_client(const struct config *c, const char *control_dir, const char *data_dir, char *err,
                          size_t errlen);

/* The name of the master key's copy in Onionbalance's directory. */
#define HANDOVER_OB_KEY_FILE "master_ed25519_secret_key"

/* How Onionbalance runs (handover_apply_onionbalance). */
struct handover_ob {
    bool as_tor_user;          /* run it as uid:gid (tor's user), else as onionfront's own user */
    uid_t uid;
    gid_t gid;
    char key_path[PATH_MAX];   /* the master key file to name in its config */
};

/* Prepare Onionbalance's directory `ob_dir` (<state_dir>/ob: its config.yaml and the master key's copy)
 * for the frontend service `sc`, whose key directory holds the master key. When tor runs as another user
 * (tor.user): ob_dir becomes a passage and gets HANDOVER_OB_KEY_FILE, a copy of the master key owned by
 * tor's user, mode 0600, written atomically; `out` names that user and the copy. Otherwise ob_dir is
 * private (0700, onionfront's), a copy left by an earlier run is removed, and `out` names sc's own key
 * file. Return 0, or -1 with a message (never key material). */
int handover_apply_onionbalance(const struct config *c, const struct service_conf *sc, const char *ob_dir,
                                struct handover_ob *out, char *err, size_t errlen);

/* The same for the anonymous services' tor (instance_anonymous_paths; spawned only), after handover_apply
 * (which hands over every service's key directory): when tor runs as another user, make state_dir/anonymous
 * a passage and give that user its DataDirectory and control directory. Return 0, or -1 with a message. */
int handover_apply_anonymous(const struct config *c, char *err, size_t errlen);

#endif
