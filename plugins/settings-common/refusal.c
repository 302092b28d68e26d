/*
 * refusal.c - a setting's value a bundled plugin refuses in init(): which
 * setting and why, said to the host or as text (settings_common.h). Not
 * the checks that find it.
 */
#include "settings_common.h"

#include <stdarg.h>
#include <stdio.h>

int
setting_refuse(struct setting_refusal *r, const char *setting, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    plugin_c_vsnprintf(r->why, sizeof(r->why), fmt, ap); /* numbers as twice.conf writes them */
    va_end(ap);
    r->setting = setting;
    return -1;
}

/* A 1.2 plugin is only loaded by a 1.2 host, which has setting_error; a
 * table without it (a hand-made host) still gets the setting's name. */
void
setting_refusal_report(const twice_api *api, const twice_settings *set,
                       const struct setting_refusal *r)
{
    if (r->setting != NULL && TWICE_API_HAS(api, setting_error)) {
        api->setting_error(set, r->setting, "%s", r->why);
    } else if (r->setting != NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "setting '%s': %s", r->setting, r->why);
    } else {
        api->log(NULL, TWICE_LOG_ERROR, "%s", r->why);
    }
}

void
setting_refusal_text(const struct setting_refusal *r, char *buf, size_t cap)
{
    if (r->setting != NULL) {
        snprintf(buf, cap, "setting '%s': %s", r->setting, r->why);
    } else {
        snprintf(buf, cap, "%s", r->why);
    }
}
