/* ob_instance.c — an instance's ob_config file (see ob_instance.h). */
#include "sidecar/balance/ob_instance.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/core/fsutil.h"
#include "sidecar/config/ob_config.h"
#include "sidecar/core/onion_address.h"

int ob_instance_prepare(const char *dir, const char *address, const struct ob_conf *ob, char *err, size_t errlen)
{
    char text[128];
    if (ob->role != OB_ROLE_INSTANCE)
        return 0;
    if (onion_address_equal(address, ob->master_address)) {
        snprintf(err, errlen, "%s: holds the master key %s.onion itself; an instance needs its own key (the "
                              "master key belongs only to the frontend)", dir, ob->master_address);
        return -1;
    }
    int len = ob_instance_file_text(ob->master_address, text, sizeof(text));
    int dfd = fs_open_dir(dir, false, err, errlen);
    if (len < 0 || dfd < 0) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    /* tor opens the file as its User, who owns the directory (handover.c): as root, give the file to the
     * directory's owner, as clientauth.c does its .auth files, or tor refuses the SETCONF (513). */
    struct stat st;
    int rc = fstat(dfd, &st);
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    else
        rc = fs_write_at_owned(dfd, dir, OB_CONFIG_FILE, text, (size_t)len, geteuid() == 0 ? st.st_uid : (uid_t)-1,
                               geteuid() == 0 ? st.st_gid : (gid_t)-1, err, errlen);
    close(dfd);
    return rc;
}
