/*
 * turkish_locale.h - puts tr_TR.UTF-8 in force for the whole process, as a
 * plugin's setlocale(LC_ALL, "") would on a Turkish machine: there glibc's
 * tolower('I') is 'I' (the dotless i is not one byte) and
 * strcasecmp("ID", "id") != 0. The system's tr_TR.UTF-8 when it is
 * installed (scripts/deps.sh makes it as root), else one built with
 * localedef into a temporary LOCPATH, as comma_locale.h does for de_DE.
 * Used by test-ascii-locale.c and plugins/http-common/tests/test-http-common.c.
 */
#ifndef TWICE_TEST_TURKISH_LOCALE_H
#define TWICE_TEST_TURKISH_LOCALE_H

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define TURKISH_LOCALE "tr_TR.UTF-8"

/* Does the process's locale fold case the Turkish way ('I' is not 'i')? */
static int
turkish_locale_in_force(void)
{
    return strcasecmp("ID", "id") != 0;
}

/*
 * setlocale(LC_ALL, TURKISH_LOCALE), building the locale first when the
 * system has none. 0 when it is in force; -1 with a message on stderr (a
 * failure, never a skip: CI installs `locales`).
 */
static int
turkish_locale_set(void)
{
    if (setlocale(LC_ALL, TURKISH_LOCALE) != NULL && turkish_locale_in_force()) {
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512], cmd[1200];
    snprintf(dir, sizeof(dir), "%s/twice-locale-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("turkish_locale_set: mkdtemp");
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "localedef -i tr_TR -f UTF-8 '%s/%s' >/dev/null 2>&1", dir,
             TURKISH_LOCALE);
    int rc = system(cmd);
    setenv("LOCPATH", dir, 1);
    int ok = setlocale(LC_ALL, TURKISH_LOCALE) != NULL && turkish_locale_in_force();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir); /* loaded: glibc keeps it mapped */
    if (system(cmd) != 0) {
        fprintf(stderr, "turkish_locale_set: could not remove %s\n", dir);
    }
    if (!ok) {
        fprintf(stderr,
                "turkish_locale_set: no %s, and localedef could not build one (exit %d): "
                "install Debian's `locales` (scripts/deps.sh)\n",
                TURKISH_LOCALE, rc);
        return -1;
    }
    return 0;
}

#endif
