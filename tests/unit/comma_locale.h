/*
 * comma_locale.h - puts a locale whose decimal point is ',' (de_DE.UTF-8) in
 * force for the whole process, as a plugin's setlocale(LC_ALL, "") would on a
 * German machine. The system's de_DE.UTF-8 when it is installed, else one built
 * with localedef (Debian's `locales`, in scripts/deps.sh) into a temporary
 * LOCPATH: no root needed. Used by test-locale.c, test-key-texts.c and
 * plugins/match-recompute/tests/test-match-recompute.c.
 */
#ifndef TWICE_TEST_COMMA_LOCALE_H
#define TWICE_TEST_COMMA_LOCALE_H

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMMA_LOCALE "de_DE.UTF-8"

/* Is the process's locale one that writes 1.5 as "1,5"? */
static int
comma_locale_in_force(void)
{
    char text[16];
    snprintf(text, sizeof(text), "%.1f", 1.5);
    return strcmp(localeconv()->decimal_point, ",") == 0 && strcmp(text, "1,5") == 0;
}

/*
 * setlocale(LC_ALL, COMMA_LOCALE), building the locale first when the system
 * has none. 0 when the comma locale is in force; -1 with a message on stderr
 * (a failure, never a skip: CI installs `locales`).
 */
static int
comma_locale_set(void)
{
    if (setlocale(LC_ALL, COMMA_LOCALE) != NULL && comma_locale_in_force()) {
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512], cmd[1200];
    snprintf(dir, sizeof(dir), "%s/twice-locale-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("comma_locale_set: mkdtemp");
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 '%s/%s' >/dev/null 2>&1", dir,
             COMMA_LOCALE);
    int rc = system(cmd);
    setenv("LOCPATH", dir, 1);
    int ok = setlocale(LC_ALL, COMMA_LOCALE) != NULL && comma_locale_in_force();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir); /* loaded: glibc keeps it mapped */
    if (system(cmd) != 0) {
        fprintf(stderr, "comma_locale_set: could not remove %s\n", dir);
    }
    if (!ok) {
        fprintf(stderr,
                "comma_locale_set: no %s, and localedef could not build one (exit %d): "
                "install Debian's `locales` (scripts/deps.sh)\n",
                COMMA_LOCALE, rc);
        return -1;
    }
    return 0;
}

#endif
