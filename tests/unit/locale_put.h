/*
 * locale_put.h - puts a named locale in force for the whole process, as a
 * plugin's setlocale(LC_ALL, "") would on a machine set up that way: the
 * system's locale when it is installed (scripts/deps.sh makes de_DE.UTF-8
 * and tr_TR.UTF-8 as root), else one built with localedef (Debian's
 * `locales`) into a temporary LOCPATH, which needs no root. The one helper
 * behind comma_locale.h and turkish_locale.h.
 */
#ifndef TWICE_TEST_LOCALE_PUT_H
#define TWICE_TEST_LOCALE_PUT_H

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * setlocale(LC_ALL, name), building it from localedef's source (e.g. "de_DE")
 * first when the system has none; in_force says whether the locale that is
 * in force behaves as the test needs. 0 when it does; -1 with a message on
 * stderr (a failure, never a skip: CI installs `locales`).
 */
static int
locale_put(const char *source, const char *name, int (*in_force)(void))
{
    if (setlocale(LC_ALL, name) != NULL && in_force()) {
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512], cmd[1200];
    snprintf(dir, sizeof(dir), "%s/twice-locale-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("locale_put: mkdtemp");
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "localedef -i %s -f UTF-8 '%s/%s' >/dev/null 2>&1", source, dir,
             name);
    int rc = system(cmd);
    setenv("LOCPATH", dir, 1);
    int ok = setlocale(LC_ALL, name) != NULL && in_force();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir); /* loaded: glibc keeps it mapped */
    if (system(cmd) != 0) {
        fprintf(stderr, "locale_put: could not remove %s\n", dir);
    }
    if (!ok) {
        fprintf(stderr,
                "locale_put: no %s, and localedef could not build one (exit %d): "
                "install Debian's `locales` (scripts/deps.sh)\n",
                name, rc);
        return -1;
    }
    return 0;
}

#endif
