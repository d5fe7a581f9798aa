/* torowner.h — whether onionfront can work with an attached tor's user: the rule that decides, from the
 * uid the kernel reports for the control socket's peer (SO_PEERCRED, cp_conn_peer_uid) and the uid tor
 * claims (GETINFO process/uid), whether onionfront (its own effective uid) may go on. As root it hands the
 * key and proxy directories to tor's user, so that user must be one the kernel vouches for.
 *
 * Pure: no I/O besides the user database for a name in the message, no logging. tor.c asks and acts. */
#ifndef ONIONFRONT_TOROWNER_H
#define ONIONFRONT_TOROWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Attach mode, the attached tor verified: `peer` is its uid from the control socket's peer credentials
 * (-1: none, as on a TCP control port), `claimed` the uid it states (-1: none), `self` onionfront's
 * effective uid. Return true with a message in `out` if onionfront must not go on:
 *  - as root, a tor that claims another user's uid without peer credentials to prove it (root would
 *    hand that user every key directory on tor's word alone);
 *  - not root, a tor of another user (tor accepts only key directories its own user owns, and must
 *    reach onionfront's 0700 proxy directory: only root can hand them over). */
bool torowner_problem(long peer, long claimed, uid_t self, char *out, size_t outlen);

#endif
