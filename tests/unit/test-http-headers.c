/*
 * test-http-headers.c - the headers http_perform hands back: those of the
 * final response only (an interim 1xx's are forgotten), names as sent,
 * values trimmed, looked up in any case, and none left over from the
 * response before when the same response is used again. A loopback server
 * thread in this process answers with canned responses.
 */
#include "buf.h"
#include "check.h"
#include "http.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const answers[] = {
    "HTTP/1.1 103 Early Hints\r\nX-Interim: yes\r\n\r\n"
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Amzn-RequestId:  req-1 \t\r\n"
    "x-amz-retry-after:3\r\nX-Empty:\r\n\r\nok",
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nX-Amzn-Query-Error: Code;Sender\r\n\r\n",
};

struct server {
    int fd;
    int port;
};

/* Read one request (headers only: the test sends GETs) from c; 0 at its end. */
static int
read_request(int c)
{
    char buf[4096];
    size_t len = 0;
    while (len < sizeof(buf) - 1) {
        ssize_t n = read(c, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0) {
            return -1;
        }
        len += (size_t) n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") != NULL) {
            return 0;
        }
    }
    return -1;
}

/* Answer each request of one kept-alive connection with the next answer. */
static void *
serve(void *arg)
{
    struct server *s = arg;
    int c = accept(s->fd, NULL, NULL);
    for (size_t i = 0; c >= 0 && i < sizeof(answers) / sizeof(answers[0]); i++) {
        if (read_request(c) != 0 || write(c, answers[i], strlen(answers[i])) < 0) {
            break;
        }
    }
    if (c >= 0) {
        close(c);
    }
    return NULL;
}

static int
server_listen(struct server *s)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *) &sa, sizeof(sa)) != 0 ||
        listen(s->fd, 1) != 0 || getsockname(s->fd, (struct sockaddr *) &sa, &len) != 0) {
        return -1;
    }
    s->port = ntohs(sa.sin_port);
    return 0;
}

static void
test_headers(void)
{
    struct server s;
    pthread_t t;
    CHECK_INT(server_listen(&s), 0);
    CHECK_INT(pthread_create(&t, NULL, serve, &s), 0);

    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
    const char *const hdrs[] = {"X-Amz-Target: AmazonSQS.ReceiveMessage", "X-Amz-Date: x"};
    struct http_request req = {
        .method = "GET",
        .url = url,
        .headers = hdrs,
        .nheaders = 2,
        .timeout_ms = 10000,
        .connect_timeout_ms = 2000,
        .no_proxy = 1,
    };
    struct http_client *h = http_client_new(NULL);
    struct http_response resp;
    struct http_error err;
    http_response_init(&resp);
    CHECK(h != NULL);

    CHECK_INT(http_perform(h, &req, &resp, &err), 0);
    CHECK_INT(resp.status, 200);
    CHECK_STR(buf_str(&resp.body), "ok");
    CHECK_INT(resp.nheaders, 4);
    CHECK_STR(resp.headers[0].name, "Content-Length");
    CHECK_STR(resp.headers[0].value, "2");
    CHECK_STR(resp.headers[1].name, "X-Amzn-RequestId");
    CHECK_STR(http_response_header(&resp, "x-amzn-requestid"), "req-1");
    CHECK_STR(http_response_header(&resp, "X-AMZ-RETRY-AFTER"), "3");
    CHECK_STR(http_response_header(&resp, "x-empty"), "");
    CHECK(http_response_header(&resp, "x-interim") == NULL);

    CHECK_INT(http_perform(h, &req, &resp, &err), 0);
    CHECK_INT(resp.status, 400);
    CHECK_INT(resp.nheaders, 2);
    CHECK_STR(http_response_header(&resp, "x-amzn-query-error"), "Code;Sender");
    CHECK(http_response_header(&resp, "x-amzn-requestid") == NULL);
    CHECK_INT(http_client_connects(h), 1); /* the connection was kept alive */

    http_response_free(&resp);
    http_client_free(h);
    pthread_join(t, NULL);
    close(s.fd);
}

int
main(void)
{
    test_headers();
    return check_done("test-http-headers");
}
