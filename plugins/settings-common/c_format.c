/*
 * c_format.c - plugin_c_vsnprintf (settings_common.h): a caller's format
 * written in the C locale, whatever locale another plugin of the worker set
 * with setlocale(). The plugins' copy of core/text/cnum.c's, which plugins
 * cannot link; tests/check-locale.py allows a v*printf here only.
 */
#include "settings_common.h"

#include <locale.h>
#include <stdio.h>

int
plugin_c_vsnprintf(char *out, size_t cap, const char *fmt, va_list ap)
{
    /* glibc answers "C" with its built-in object: no allocation to fail. */
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t) 0);
    locale_t old = c != (locale_t) 0 ? uselocale(c) : (locale_t) 0;
    int n = vsnprintf(out, cap, fmt, ap);
    if (old != (locale_t) 0) {
        uselocale(old);
    }
    if (c != (locale_t) 0) {
        freelocale(c);
    }
    return n;
}
