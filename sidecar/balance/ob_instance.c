/* ob_instance.c — an instance's ob_config file (see ob_instance.h). */
#include "sidecar/balance/ob_instance.h"

#include <stdio.h>
#include <unistd.h>

#include "sidecar/core/fsutil.h"
#include "sidecar/identity/keys.h"
#include "sidecar/config/ob_config.h"

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
    int rc = fs_write_at(dfd, dir, OB_CONFIG_FILE, text, (size_t)len, err, errlen);
    close(dfd);
    return rc;
}
