/* tmpdir.h — private temporary directories for tests: made with mkdtemp under /tmp and removed with
 * everything below them at the end. Linked into every test binary, like fake_ctl. Does not touch
 * anything outside the directory it made (links are removed, never followed). */
#ifndef TESTS_TMPDIR_H
#define TESTS_TMPDIR_H

#include <stddef.h>

/* Make the directory "/tmp/<prefix>.XXXXXX" (mode 0700) and put its path in `out` (`len` bytes).
 * Return 0, or -1 (errno set). */
int tmpdir_make(char *out, size_t len, const char *prefix);

/* Remove `dir` and everything in it. Return 0, or -1 if something could not be removed. */
int tmpdir_remove(const char *dir);

#endif
