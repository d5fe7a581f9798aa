/* torowner.c — whether onionfront can work with an attached tor's user (see torowner.h). */
#include "sidecar/tor/torowner.h"

#include <pwd.h>
#include <stdio.h>

bool torowner_problem(long peer, long claimed, uid_t self, char *out, size_t outlen)
{
    if (peer < 0 && self == 0 && claimed > 0) {
        snprintf(out, outlen,
                 "the attached tor says it runs as uid %ld, but its control connection carries no peer "
                 "credentials (SO_PEERCRED needs a unix ControlSocket) to prove it; as root onionfront hands its "
                 "key and proxy directories only to a user the kernel vouches for: attach through tor's "
                 "ControlSocket, or run onionfront as tor's user",
                 claimed);
        return true;
    }
    if (peer < 0 || (uid_t)peer == self || self == 0)
        return false;
    /* Measured: SETCONF HiddenServiceDir of another user's directory is refused by tor. */
    const struct passwd *pw = getpwuid((uid_t)peer);
    snprintf(out, outlen,
             "the attached tor runs as uid %ld%s%s%s, onionfront as uid %lu: tor only accepts key directories "
             "its own user owns and must reach onionfront's proxy sockets; run onionfront as that user "
             "(systemd User=%s) or as root, which hands its directories over to tor's user",
             peer, pw ? " (" : "", pw ? pw->pw_name : "", pw ? ")" : "", (unsigned long)self,
             pw ? pw->pw_name : "...");
    return true;
}
