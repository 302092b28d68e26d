/*
 * cnum.h - numbers read and written, and error texts said, in the "C"
 * locale whatever locale the process or the calling thread has. twiced
 * never calls setlocale(), but a plugin (or a library it uses) may call
 * setlocale(LC_ALL, "") in its init, and then strtod and printf's %f/%g
 * read and write "1,5" in every thread that has no locale of its own: keys
 * would change or collide, /metrics would break its scrapers. So every
 * number the host reads or writes goes through here (buf_printf and the log
 * do); tests/check-locale.py refuses strtod, atof, sscanf, a float
 * conversion in a plain printf and any v*printf anywhere else in core/ and
 * sdk/mock/, and strerror, perror and strsignal there.
 *
 * Why a few locale-proof functions rather than uselocale() of a C locale at
 * the start of every thread: the host's threads run plugin code (init,
 * handle, derive_key) whose own output should keep the locale the plugin
 * chose, and plugins start threads of their own that call back into the
 * host (log, error, the mock's keys); these functions are right on any
 * thread, and one check keeps the rest of the code from going around them.
 */
#ifndef TWICE_CNUM_H
#define TWICE_CNUM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* strtod of s as the C locale reads it ('.' is the decimal point). */
double cnum_strtod(const char *s, char **end);

/* vsnprintf / snprintf with the C locale in force for the call only: the
 * calling thread's locale is restored before they return. */
int cnum_vsnprintf(char *out, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int cnum_snprintf(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* vfprintf with the C locale in force for the call only. */
int cnum_vfprintf(FILE *f, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* strerror(err) as the C locale says it ("No such file or directory"),
 * whatever LC_MESSAGES a plugin set: glibc translates strerror's text once
 * a process called setlocale(LC_ALL, ""), and the host's messages, which
 * tests, docs and operators' alerts quote, would change language with the
 * plugins loaded. The text is static or per thread: use it before the next
 * call on the same thread. tests/check-locale.py refuses plain strerror,
 * perror and strsignal in core/. */
const char *cnum_strerror(int err);

/* strsignal(sig) the same way ("Segmentation fault"), as static or per
 * thread as strsignal's own. */
const char *cnum_strsignal(int sig);

#endif
