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
 * Owns that policy only; fsutil.c does the changes (by descriptor or without following symlinks) and
 * keys.c the keys. Never logs: errors go to the caller's buffer, naming the path. */
#ifndef ONIONFRONT_HANDOVER_H
#define ONIONFRONT_HANDOVER_H

#include <stddef.h>
#include <sys/types.h>

struct config;

/* Which user tor runs as when it is not onionfront's own: tor.user in spawn mode; in attach mode
 * `attached_uid` (the attached tor's process/uid, -1 while unknown) when it is not root. Return 1 with
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

/* The same for the anonymous services' tor (instance_anonymous_paths; spawned only), after handover_apply
 * (which hands over every service's key directory): when tor runs as another user, make state_dir/anonymous
 * a passage and give that user its DataDirectory and control directory. Return 0, or -1 with a message. */
int handover_apply_anonymous(const struct config *c, char *err, size_t errlen);

#endif
