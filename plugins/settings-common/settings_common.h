/*
 * settings_common.h - what every bundled plugin that refuses a setting's
 * value in init() does alike, linked into each as a static library: a
 * refusal that names the setting to blame, said once to the host
 * (api->setting_error, so twice.conf's line of that setting is shown) or
 * as describe()'s text. Not the checks themselves: they stay with each
 * plugin (and http-common). Also the ASCII case comparison, character
 * class and C-locale formatting they use, which a locale another plugin set
 * cannot change (tests/check-locale.py refuses the libc ones in plugins/).
 * Not an SDK header.
 */
#ifndef TWICE_SETTINGS_COMMON_H
#define TWICE_SETTINGS_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <twice/plugin.h>

/*
 * Why init cannot go on. setting: the declared setting whose value is to
 * blame (a string literal), so that the host reports it at the line of
 * twice.conf that sets it (its settings group's line when the value is the
 * declared default); NULL when no one setting is (out of memory, a library
 * or thread failing, two settings that clash). why: the reason without the
 * setting's name ("must be 1-600 seconds"), as api->setting_error wants it.
 */
struct setting_refusal {
    const char *setting;
    char why[512];
};

/* Fill r with setting and the formatted reason. Returns -1, so that a check
 * can end with `return setting_refuse(r, ...)`. */
int setting_refuse(struct setting_refusal *r, const char *setting, const char *fmt, ...)
    TWICE_PRINTF(3, 4);

/* Say r from init(), once: api->setting_error when it blames a setting,
 * else an error log line (the host's "init failed: ..."). */
void setting_refusal_report(const twice_api *api, const twice_settings *set,
                            const struct setting_refusal *r);

/* r as one line for describe()'s text: "setting 'url': why", or why. */
void setting_refusal_text(const struct setting_refusal *r, char *buf, size_t cap);

/* strncasecmp with only ASCII 'A'..'Z' folded, whatever locale is in force:
 * under tr_TR.UTF-8 (a plugin's setlocale() changes the whole worker) the
 * libc one takes 'I' and 'i' for two letters. For URL schemes and header
 * names, which are ASCII. */
int plugin_ascii_strncasecmp(const char *a, const char *b, size_t n);

/* isspace of the C locale: ' ', '\t', '\n', '\v', '\f', '\r' and no other
 * byte, whatever locale is in force (under a Latin-1 locale libc's isspace
 * also takes 0x85 and 0xA0, bytes of UTF-8 text). c: a byte, as unsigned char. */
int plugin_ascii_isspace(int c);

/* vsnprintf in the C locale for this call only ("1.5", never "1,5"): the
 * calling thread's locale is restored before it returns. */
int plugin_c_vsnprintf(char *out, size_t cap, const char *fmt, va_list ap) TWICE_PRINTF(3, 0);

#endif
