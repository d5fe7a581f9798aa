/* ob_instance.h — the instance side of Onionbalance on one tor: before a SETCONF that carries
 * `HiddenServiceOnionBalanceInstance 1` for a service, its HiddenServiceDir on that tor must hold
 * `ob_config` ("MasterOnionAddress <master>.onion"), since tor reads the file while parsing the config and
 * answers 513 without it (TOR-FACTS).
 *
 * Owns writing that one file. The directory may be tor's user's (handover.c), so everything is relative
 * to a directory descriptor: the file is written with O_EXCL|O_NOFOLLOW and renamed into place (a planted
 * symlink is replaced, never followed). Not the SETCONF (service.c), not the role (ob_config.h). Never
 * logs: errors name the path. */
#ifndef ONIONFRONT_OB_INSTANCE_H
#define ONIONFRONT_OB_INSTANCE_H

#include <stddef.h>

struct ob_conf;

/* Make `dir` (a HiddenServiceDir of an instance service whose own address is `address`, no ".onion") ready
 * for `ob`: write <dir>/ob_config atomically (0600; as root, owned by the directory's owner: tor's User reads
 * it). Refuse (-1, message) when the instance's own key is
 * the master's (the master key must never sit in an instance's directory). Return 0, also for a service
 * without the instance role (nothing to do), or -1 with a message naming the path. */
int ob_instance_prepare(const char *dir, const char *address, const struct ob_conf *ob, char *err, size_t errlen);

#endif
