/*
 * settings.c - the settings both HTTP plugins have, url and timeout,
 * checked in init() (and describe()) with the setting to blame when a
 * value cannot be used, and the end of init() both share. Not the URL
 * template itself (url.c), not the refusal (settings-common), nor the
 * settings only one plugin has.
 */
#include "http_common.h"

#include <curl/curl.h>
#include <stdlib.h>

int
http_init_finish(const twice_api *api, const twice_settings *set, int rc,
                 struct setting_refusal *r)
{
    if (rc == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        rc = setting_refuse(r, NULL, "curl_global_init failed");
    }
    if (rc != 0) {
        setting_refusal_report(api, set, r); /* at the blamed setting's line */
    }
    return rc;
}

int
http_check_timeout(const twice_api *api, const twice_settings *set, long max, long *out,
                   struct setting_refusal *r)
{
    const char *timeout = api->setting(set, "timeout");
    long t = timeout != NULL ? strtol(timeout, NULL, 10) : 0;
    if (t < 1 || t > max) {
        return setting_refuse(r, "timeout", "must be 1-%ld seconds", max);
    }
    *out = t;
    return 0;
}

int
http_check_url(const char *url, struct setting_refusal *r)
{
    const char *why = NULL;
    if (url == NULL) {
        why = "is not set (an http:// or https:// endpoint)";
    } else if (plugin_ascii_strncasecmp(url, "http://", 7) != 0 &&
               plugin_ascii_strncasecmp(url, "https://", 8) != 0) {
        why = "must start with http:// or https://";
    } else {
        why = http_url_check(url);
    }
    return why != NULL ? setting_refuse(r, "url", "%s", why) : 0;
}
