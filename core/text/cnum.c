/*
 * cnum.c - the C locale's numbers and error texts (cnum.h): one C locale
 * object, made once, read with strtod_l and strerror_l and put in force
 * around a vsnprintf with uselocale(), which changes the calling thread only
 * and so is safe beside threads that run a plugin in the locale it chose.
 */
#include "cnum.h"

#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t c_once = PTHREAD_ONCE_INIT;
static locale_t c_locale = (locale_t) 0;

static void
make_c_locale(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t) 0);
}

/*
 * The C locale object. glibc answers "C" with its built-in object and
 * allocates nothing, so this does not fail in practice; if it ever did,
 * the thread's own locale is used (what plain strtod and printf would do).
 */
static locale_t
c_locale_get(void)
{
    pthread_once(&c_once, make_c_locale);
    return c_locale;
}

double
cnum_strtod(const char *s, char **end)
{
    locale_t c = c_locale_get();
    if (c == (locale_t) 0) {
        return strtod(s, end);
    }
    return strtod_l(s, end, c);
}

int
cnum_vsnprintf(char *out, size_t cap, const char *fmt, va_list ap)
{
    locale_t c = c_locale_get();
    locale_t old = c != (locale_t) 0 ? uselocale(c) : (locale_t) 0;
    int n = vsnprintf(out, cap, fmt, ap);
    if (old != (locale_t) 0) {
        uselocale(old);
    }
    return n;
}

int
cnum_snprintf(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = cnum_vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n;
}

int
cnum_vfprintf(FILE *f, const char *fmt, va_list ap)
{
    locale_t c = c_locale_get();
    locale_t old = c != (locale_t) 0 ? uselocale(c) : (locale_t) 0;
    int n = vfprintf(f, fmt, ap);
    if (old != (locale_t) 0) {
        uselocale(old);
    }
    return n;
}

const char *
cnum_strerror(int err)
{
    locale_t c = c_locale_get();
    if (c == (locale_t) 0) {
        const char *s = strerrordesc_np(err); /* never translated; NULL: no such errno */
        return s != NULL ? s : "Unknown error";
    }
    return strerror_l(err, c);
}

/* No strsignal_l: strsignal with the C locale in force for the call, as
 * cnum_vsnprintf does (the message catalogue follows the thread's locale). */
const char *
cnum_strsignal(int sig)
{
    locale_t c = c_locale_get();
    locale_t old = c != (locale_t) 0 ? uselocale(c) : (locale_t) 0;
    const char *s = strsignal(sig);
    if (old != (locale_t) 0) {
        uselocale(old);
    }
    return s;
}
