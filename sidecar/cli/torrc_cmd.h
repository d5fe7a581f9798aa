/* torrc_cmd.h — `onionfront import-torrc [TORRC]`: print the onionfront config equivalent to the onion
 * services of an existing torrc (default /etc/tor/torrc, the one Debian's tor@default reads), and the
 * import-key commands that move their keys in.
 *
 * Owns the command's file access and output: the torrc itself (torrc_import.h parses it) and each
 * HiddenServiceDir's authorized_clients/ (tor's v3 client authorization files, read without following
 * links), so that a private service stays private. Writes nothing anywhere. */
#ifndef ONIONFRONT_TORRC_CMD_H
#define ONIONFRONT_TORRC_CMD_H

#include <stdio.h>

#include "sidecar/cli/torrc_import.h"

#define TORRC_CMD_DEFAULT "/etc/tor/torrc"

/* Print the config (JSON) on `out`; on `errf`, as '#' comments, every line not carried over with the
 * reason, and the import-key commands to run. A HiddenServiceDir whose authorized_clients/ cannot be
 * read fails the command (its clients would be lost and the service made public). Return the exit
 * status: 0, or 1 with the reason on `errf` (no onion service in it, a file it cannot read). */
int torrc_cmd_import(const char *torrc_path, FILE *out, FILE *errf);

/* Read and parse the torrc at `torrc_path` (its last component not a symlink, at most
 * TORRC_IMPORT_MAX_BYTES). Return the result (torrc_import_free), or NULL with the reason on `errf`,
 * prefixed "`who`: ". */
struct torrc_import *torrc_cmd_read(const char *torrc_path, const char *who, FILE *errf);

#endif
