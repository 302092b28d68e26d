/*
 * awsconfig.h - the AWS shared files (~/.aws/credentials, ~/.aws/config):
 * where they are and what a profile's section says, read the way botocore
 * reads them; and the AWS_* variables every client reads the same way (a
 * service's endpoint). Not a general INI library; nothing here logs.
 */
#ifndef TWICE_AWSCONFIG_H
#define TWICE_AWSCONFIG_H

#include <stddef.h>

enum awsconfig_kind {
    AWSCONFIG_CREDENTIALS, /* sections are [NAME] */
    AWSCONFIG_CONFIG       /* sections are [profile NAME], and [default] */
};

enum awsconfig_status {
    AWSCONFIG_OK,         /* the profile's section was found */
    AWSCONFIG_NO_FILE,    /* the file does not exist */
    AWSCONFIG_NO_SECTION, /* the file has no section for the profile */
    AWSCONFIG_ERROR       /* errno says why: ENOMEM, EACCES, EISDIR... */
};

/* One profile's keys and values. Values may be secrets: they are wiped
 * when the section is freed. */
struct awsconfig_section;

/*
 * The file's path: AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE (a
 * leading "~/" is expanded), else ~/.aws/credentials / ~/.aws/config.
 * Returns a string the caller frees, or NULL with errno ENOMEM, or ENOENT
 * when the home directory is unknown. *shown (may be NULL) gets the name
 * to put in messages: the variable's value, or "~/.aws/credentials";
 * borrowed, valid until the environment changes.
 */
char *awsconfig_path(enum awsconfig_kind kind, const char **shown);

/* profile, else AWS_PROFILE when set and not empty, else "default".
 * Borrowed: valid while profile and the environment are unchanged. */
const char *awsconfig_profile_name(const char *profile);

/*
 * Read the section for `profile` from the file at path. Comments are whole
 * lines starting with '#' or ';'; keys are case-insensitive; blanks
 * around '=' and at the ends of values are dropped; indented lines after a
 * key continue it (nested settings such as "s3 =") and are not keys of
 * their own. A section or key given twice: the last one wins, as sections
 * merge. On AWSCONFIG_OK, *out is the caller's (awsconfig_section_free).
 */
enum awsconfig_status awsconfig_read_profile(const char *path, enum awsconfig_kind kind,
                                             const char *profile, struct awsconfig_section **out);

/* The value of key (any case), or NULL. Borrowed from s. */
const char *awsconfig_get(const struct awsconfig_section *s, const char *key);

void awsconfig_section_free(struct awsconfig_section *s);

/*
 * A key of the config file's profile (profile NULL: AWS_PROFILE, else
 * "default"), honouring AWS_CONFIG_FILE: used for `region`. Returns 1 with
 * *out a string the caller frees; 0 with *out NULL when the file, the
 * profile or the key is absent; -1 with errno set when the file cannot be
 * read or memory runs out.
 */
int awsconfig_profile_value(const char *profile, const char *key, char **out);

/* The largest shared file awsconfig_read_profile reads. */
#define AWSCONFIG_MAX_FILE (1024 * 1024)

/*
 * A small file that may hold secrets, read whole into one allocation (no
 * realloc leaves copies behind) and NUL-terminated; *len its length. The
 * caller wipes and frees it. NULL with errno on failure (EFBIG past max
 * bytes, EISDIR for a directory).
 */
char *awsconfig_read_file(const char *path, size_t max, size_t *len);

/* getenv, but an empty value counts as unset, as the AWS SDKs read their
 * variables. Borrowed from the environment. */
const char *awsconfig_env(const char *name);

/*
 * The endpoint the environment sets for an AWS service ("sqs", "s3"):
 * AWS_ENDPOINT_URL_<SERVICE> (upper case), else AWS_ENDPOINT_URL, neither
 * when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true; NULL when none is. *name
 * gets the variable's name, for messages (valid until the thread's next
 * call). Borrowed from the environment; not checked.
 */
const char *awsconfig_endpoint_env(const char *service, const char **name);

/*
 * The endpoint of an AWS service ("sqs", "sts"), chosen as the AWS SDKs do:
 * AWS_ENDPOINT_URL_<SERVICE> (upper case), else AWS_ENDPOINT_URL (neither
 * when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true), else the regional
 * https://SERVICE.REGION.amazonaws.com (.com.cn in China), else, region
 * NULL, the global https://SERVICE.amazonaws.com. A new string, or NULL
 * on ENOMEM.
 */
char *awsconfig_service_url(const char *service, const char *region);

/*
 * STS's endpoint for region, as awsconfig_service_url("sts") chooses it,
 * with a URL from the environment checked first (url_problem: a bad
 * AWS_ENDPOINT_URL_STS would fail only as an opaque HTTP error). A new
 * string, or NULL with why naming the variable ("AWS_ENDPOINT_URL_STS: not
 * a usable STS endpoint URL: has no host"; the value is not shown) or
 * saying out of memory.
 */
char *awsconfig_sts_url(const char *region, char *why, size_t whylen);

#endif
