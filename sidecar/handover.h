/* handover.h — the directory hand-over policy: which directories and key files onionfront (as root)
 * gives to the user its tor runs as, and to which user.
 *
 * Owns no state: the config and the tor's uid are passed in. Not the directories' creation rules
 * (fsutil.c) nor the keys (keys.c). */
#ifndef ONIONFRONT_HANDOVER_H
#define ONIONFRONT_HANDOVER_H

#include <stddef.h>
#include <sys/types.h>

struct config;

/* Which user tor runs as, when onionfront must hand its directories over: tor.user in spawn mode (which
 * needs onionfront to run as root); in attach mode `tor_uid` (the attached tor's process/uid, -1 while
 * unknown) when it is not root and onionfront is. Return 1 with the uid and gid, 0 if there is nothing to hand
 * over, -1 with a message. */
int handover_tor_owner(const struct config *c, long tor_uid, uid_t *uid, gid_t *gid, char *err, size_t errlen);

/* Hand the directories tor uses (and every service's key directory, creating a missing key) to that
 * user; see handover.c for the list and why. Return 0 (also when there is nothing to hand over), or -1
 * with a message. */
int handover_give_to_tor_user(const struct config *c, long tor_uid, char *err, size_t errlen);

#endif
