/*
 * replay.c - a main() for the fuzz targets in builds without libFuzzer: it
 * runs LLVMFuzzerTestOneInput once on every file named or found in the
 * directories named (the committed corpus and the inputs of past crashes),
 * so every build, with gcc, ASan or valgrind, checks them. Not a fuzzer:
 * it generates nothing. Options starting with '-' are libFuzzer's, ignored.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Run one file; 0, or -1 when it cannot be read. */
static int
run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *data = NULL;
    size_t len = 0, cap = 0;
    int rc = -1;

    if (fp == NULL) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (len == cap) {
            unsigned char *p = realloc(data, cap ? cap * 2 : 4096);
            if (p == NULL) {
                goto out;
            }
            data = p;
            cap = cap ? cap * 2 : 4096;
        }
        size_t got = fread(data + len, 1, cap - len, fp);
        len += got;
        if (got == 0) {
            break;
        }
    }
    if (!ferror(fp)) {
        LLVMFuzzerTestOneInput(data, len);
        rc = 0;
    }
out:
    free(data);
    fclose(fp);
    return rc;
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every regular file of dir, in name order; returns how many ran, -1 on error. */
static int
run_dir(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, by_name), ran = 0;

    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (ran >= 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            ran = run_file(path) == 0 ? ran + 1 : -1;
        }
        free(names[i]);
    }
    free(names);
    return ran;
}

int
main(int argc, char **argv)
{
    int total = 0;

    if (LLVMFuzzerInitialize != NULL) {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-') {
            continue;
        }
        int ran = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i])
                  : run_file(argv[i]) == 0                       ? 1
                                                                 : -1;
        if (ran < 0) {
            return 2;
        }
        total += ran;
    }
    printf("%s: %d inputs ran without a broken promise\n", argv[0], total);
    return total > 0 ? 0 : 2;
}
