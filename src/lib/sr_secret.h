/* sr_secret.h - the API of sr_secret.c: every secret srq reads. */
#ifndef SR_SECRET_H
#define SR_SECRET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_template.h"

/* A secret from the environment (SRQ_REDIS_PASSWORD, ...), read now, by the
 * tool about to use it (Redis's password as it connects): a tool that does
 * not need one runs for an operator who cannot read it. NAME_FILE's content, its trailing newline dropped
 * (it wins), else NAME. 0 with *value (NULL when not set; free it, wiped),
 * or -1 with err naming the file and why it cannot be read. */
int sr_secret_read(const char *name, char **value, char *err, size_t errlen);

/* A profile's secret as one holder (an account) has read it. */
struct sr_secret {
	char name[40];
	char *value;      /* NULL: not set, or unreadable (failed) */
	int failed;
	char error[200];
	char path[512];   /* the file it came from, if any */
	struct timespec mtime;
	int64_t checked;  /* when the file was last looked at (mono ms) */
};
/* Secret name's value, spec its alternatives ("file:PATH", "env:NAME",
 * "env-file:NAME", or a literal): the first that is set. Kept in *set (of
 * *nset); a file is read again when it changes (looked at once a second at
 * most). A file:PATH's placeholders are filled by lookup(arg). NULL when
 * none is set; *failed = 1 with err when a file cannot be read. */
const char *sr_secret_get(struct sr_secret **set, int *nset, const char *name, const char *spec,
    sr_lookup_fn *lookup, void *arg, int *failed, char *err, size_t errlen);
/* Every secret of *set forgotten (wiped): read again when next asked. */
void sr_secrets_free(struct sr_secret **set, int *nset);
/* A secret's copy wiped and freed (NULL: nothing). */
void sr_secret_wipe(char *s);

#endif
