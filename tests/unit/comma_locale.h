/*
 * comma_locale.h - puts a locale whose decimal point is ',' (de_DE.UTF-8) in
 * force for the whole process, as a plugin's setlocale(LC_ALL, "") would on a
 * German machine. The system's de_DE.UTF-8 when it is installed, else one built
 * with localedef (Debian's `locales`, in scripts/deps.sh) into a temporary
 * LOCPATH: no root needed. Used by test-locale.c, test-key-texts.c,
 * plugins/match-recompute/tests/test-match-recompute.c and
 * plugins/settings-common/tests/test-settings-common.c.
 */
#ifndef TWICE_TEST_COMMA_LOCALE_H
#define TWICE_TEST_COMMA_LOCALE_H

#include "locale_put.h"

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

/* setlocale(LC_ALL, COMMA_LOCALE), built first when the system has none
 * (locale_put.h). 0 when it is in force; -1 with a message on stderr. */
static int
comma_locale_set(void)
{
    return locale_put("de_DE", COMMA_LOCALE, comma_locale_in_force);
}

#endif
