/*
 * test-ascii-locale.c - the host's case-insensitive comparisons under
 * tr_TR.UTF-8, as after a plugin's setlocale(LC_ALL, "") on a Turkish
 * machine, where glibc's strcasecmp("ID", "id") != 0: ascii.h folds 'I' to
 * 'i' all the same, an HTTP answer's header is found whatever its case
 * (http_response_header) and a misspelt setting's suggestion ignores case
 * (diag_edit_distance): with libc's strcasecmp and tolower there, both
 * fail. An AWS credentials file's keys in capitals are read too
 * (awsconfig_get; its keys were already folded the ASCII way when stored,
 * so this one only keeps it so).
 */
#include "check.h"
#include "turkish_locale.h"

#include "ascii.h"
#include "awsconfig.h"
#include "diag.h"
#include "http.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ascii.h itself: 'I' and 'i' are one letter, bytes >= 0x80 are no letters. */
static void
test_ascii(void)
{
    CHECK_INT(ascii_tolower('I'), 'i');
    CHECK_INT(ascii_toupper('i'), 'I');
    CHECK_INT(ascii_tolower(0xC9), 0xC9);
    CHECK_INT(ascii_strcasecmp("ID", "id"), 0);
    CHECK_INT(ascii_strcasecmp("Content-Type", "content-type"), 0);
    CHECK_INT(ascii_strncasecmp("HTTPS://x", "https://", 8), 0);
    CHECK(ascii_strcasecmp("id", "ie") < 0);
    CHECK(ascii_strcasecmp("id", "ID-x") < 0);
    CHECK(ascii_strcasecmp("\xc4\xb0", "i") > 0); /* U+0130 is not "i" */
    CHECK(ascii_strncasecmp("aws.x", "AWS.", 4) == 0);
    /* equal bytes, then a difference of case or of letter further on */
    CHECK_INT(
        ascii_strcasecmp("9e107d9d372bb6826bd81d3542a419d6", "9e107d9d372bb6826bd81d3542a419d6"),
        0);
    CHECK_INT(
        ascii_strcasecmp("9e107d9d372bb6826bd81d3542a419d6", "9E107D9D372BB6826BD81D3542A419D6"),
        0);
    CHECK(ascii_strcasecmp("9e107d9d372bb6826bd81d3542a419d6",
                           "9e107d9d372bb6826bd81d3542a419d7") < 0);
    CHECK(ascii_strcasecmp("abcD", "abc") > 0);
    CHECK(ascii_strcasecmp("abc", "ABCd") < 0);
    CHECK_INT(ascii_strncasecmp("abcX", "ABCy", 3), 0);
    CHECK_INT(ascii_strcasecmp("", ""), 0);
    CHECK(ascii_isalpha('I') && ascii_isalnum('9') && !ascii_isalpha(0xE9));
    CHECK(ascii_islower('i') && ascii_isupper('I') && ascii_isspace('\t'));
}

/* An answer's header looked up by a name of another case. */
static void
test_http_header(void)
{
    struct http_header h[] = {
        {(char *) "X-AMZ-BUCKET-REGION", (char *) "eu-west-1"},
        {(char *) "Content-Type", (char *) "application/x-amz-json-1.0"},
        {(char *) "X-Amzn-RequestId", (char *) "req-1"},
    };
    struct http_response r = {.headers = h, .nheaders = 3, .cap_headers = 3};
    CHECK_STR(http_response_header(&r, "x-amz-bucket-region"), "eu-west-1");
    CHECK_STR(http_response_header(&r, "content-type"), "application/x-amz-json-1.0");
    CHECK_STR(http_response_header(&r, "x-amzn-requestid"), "req-1");
    CHECK(http_response_header(&r, "x-no-such-header") == NULL);
}

/* A credentials file written in capitals, as some tools and people do. */
static void
test_awsconfig_keys(void)
{
    char path[] = "/tmp/twice-creds-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) {
        return;
    }
    const char text[] = "[default]\nAWS_ACCESS_KEY_ID = AKIDUPPER\n"
                        "AWS_SECRET_ACCESS_KEY = secret\nREGION = eu-west-1\n";
    CHECK_INT(write(fd, text, strlen(text)), (long long) strlen(text));
    close(fd);
    struct awsconfig_section *s = NULL;
    CHECK_INT(awsconfig_read_profile(path, AWSCONFIG_CREDENTIALS, "default", &s), AWSCONFIG_OK);
    CHECK_STR(awsconfig_get(s, "aws_access_key_id"), "AKIDUPPER");
    CHECK_STR(awsconfig_get(s, "region"), "eu-west-1");
    awsconfig_section_free(s);
    unlink(path);
}

static void
test_suggestion(void)
{
    CHECK_INT(diag_edit_distance("VISIBILITY", "visibility", 1), 0);
    CHECK_INT(diag_edit_distance("VISIBILITY", "visibility", 0), 10);
}

int
main(void)
{
    if (turkish_locale_set() != 0) {
        return 1;
    }
    test_ascii();
    test_http_header();
    test_awsconfig_keys();
    test_suggestion();
    return check_done("test-ascii-locale");
}
