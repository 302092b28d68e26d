/*
 * test-settings-common.c - a refused setting's value as the bundled
 * plugins say it: through api->setting_error when a setting is to blame,
 * an error log line when none is (or when the host's table has no
 * setting_error), and as describe()'s text. A host table that only
 * records what it is told; no plugin, no mock.
 */
#include "check.h"
#include "comma_locale.h"
#include "settings_common.h"

#include <stdarg.h>
#include <string.h>

static char said[600]; /* what the last call said: "setting_error url: why" */

static void
record(const char *prefix, const char *fmt, va_list ap)
{
    size_t n = (size_t) snprintf(said, sizeof(said), "%s", prefix);
    vsnprintf(said + n, sizeof(said) - n, fmt, ap);
}

static void
fake_setting_error(const twice_settings *s, const char *name, const char *fmt, ...)
{
    char prefix[64];
    va_list ap;
    (void) s;
    snprintf(prefix, sizeof(prefix), "setting_error %s: ", name);
    va_start(ap, fmt);
    record(prefix, fmt, ap);
    va_end(ap);
}

static void
fake_log(const twice_job *job, twice_log_level level, const char *fmt, ...)
{
    va_list ap;
    (void) job;
    va_start(ap, fmt);
    record(level == TWICE_LOG_ERROR ? "log error: " : "log: ", fmt, ap);
    va_end(ap);
}

/* What another plugin's setlocale() must not change: ASCII spaces only, and a
 * refusal's numbers written the C way (de_DE.UTF-8 writes 1.5 as "1,5"). Run
 * last: the locale stays in force. */
static void
test_ascii_and_c_locale(void)
{
    if (comma_locale_set() != 0) {
        CHECK(!"de_DE.UTF-8 in force");
        return;
    }
    const char *spaces = " \t\n\v\f\r";
    for (const char *p = spaces; *p != '\0'; p++) {
        CHECK(plugin_ascii_isspace((unsigned char) *p));
    }
    CHECK(!plugin_ascii_isspace('x'));
    CHECK(!plugin_ascii_isspace(0x85)); /* NEL, a space in Latin-1 locales */
    CHECK(!plugin_ascii_isspace(0xa0)); /* NBSP, likewise */
    CHECK(!plugin_ascii_isspace('\0'));

    struct setting_refusal r = {NULL, ""};
    setting_refuse(&r, "notify_threshold", "must be at most %.1f", 1.5);
    CHECK_STR(r.why, "must be at most 1.5");
    char text[16];
    snprintf(text, sizeof(text), "%.1f", 1.5);
    CHECK_STR(text, "1,5"); /* the locale is in force: the C text above was not luck */
}

int
main(void)
{
    twice_api api = {.size = sizeof(api), .log = fake_log, .setting_error = fake_setting_error};
    struct setting_refusal r = {NULL, ""};
    char text[600];

    CHECK_INT(setting_refuse(&r, "timeout", "must be 1-%d seconds", 600), -1);
    CHECK_STR(r.setting, "timeout");
    CHECK_STR(r.why, "must be 1-600 seconds");
    setting_refusal_report(&api, NULL, &r);
    CHECK_STR(said, "setting_error timeout: must be 1-600 seconds");
    setting_refusal_text(&r, text, sizeof(text));
    CHECK_STR(text, "setting 'timeout': must be 1-600 seconds");

    /* no one setting to blame: the host's "init failed: ..." */
    CHECK_INT(setting_refuse(&r, NULL, "curl_global_init failed"), -1);
    CHECK(r.setting == NULL);
    setting_refusal_report(&api, NULL, &r);
    CHECK_STR(said, "log error: curl_global_init failed");
    setting_refusal_text(&r, text, sizeof(text));
    CHECK_STR(text, "curl_global_init failed");

    /* a host table without setting_error still names the setting */
    api.setting_error = NULL;
    setting_refuse(&r, "url", "must start with http:// or https://");
    setting_refusal_report(&api, NULL, &r);
    CHECK_STR(said, "log error: setting 'url': must start with http:// or https://");

    /* a long reason is cut, never overrun */
    char big[1000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    setting_refuse(&r, "env", "%s", big);
    CHECK_INT(strlen(r.why), sizeof(r.why) - 1);

    test_ascii_and_c_locale();
    return check_done("test-settings-common");
}
