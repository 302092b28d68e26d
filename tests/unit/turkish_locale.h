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

#include "locale_put.h"

#include <ctype.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#define TURKISH_LOCALE "tr_TR.UTF-8"

/* Does the process's locale fold case the Turkish way ('I' is not 'i')?
 * Asked of tolower: AddressSanitizer replaces strcasecmp with its own, which
 * folds the C way in every locale. */
static int
turkish_locale_in_force(void)
{
    return tolower('I') != 'i';
}

/* setlocale(LC_ALL, TURKISH_LOCALE), built first when the system has none
 * (locale_put.h). 0 when it is in force; -1 with a message on stderr. */
static int
turkish_locale_set(void)
{
    return locale_put("tr_TR", TURKISH_LOCALE, turkish_locale_in_force);
}

#endif
