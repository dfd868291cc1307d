/* sr_batch.c - a batch's items grouped by account, one script call each
 * (sr-enqueue's commands, sr-exec's gate, sr-confirm's results). */
#include <stdlib.h>
#include <string.h>

#include "sr.h"

void
sr_batch_by_account(struct sr_batch *b, int n, const void *items,
    const char *(*account_of)(const void *items, int i), int max)
{
	char *taken = sr_malloc((size_t)n + 1);

	b->order = sr_malloc((size_t)(n + 1) * sizeof *b->order);
	b->size = sr_malloc((size_t)(n + 1) * sizeof *b->size);
	b->ngroups = b->nitems = 0;
	memset(taken, 0, (size_t)n + 1);
	for (int i = 0; i < n; i++) {
		const char *account = taken[i] ? NULL : account_of(items, i);
		int m = 0;

		if (!account)
			continue;
		/* (a batch is a few hundred items: the quadratic walk costs
		 * nothing next to one round trip) */
		for (int k = i; k < n; k++) {
			const char *other = taken[k] ? NULL : account_of(items, k);

			if (!other || strcmp(other, account) != 0)
				continue;
			if (max > 0 && m == max) {
				b->size[b->ngroups++] = m;
				m = 0;
			}
			taken[k] = 1;
			b->order[b->nitems++] = k;
			m++;
		}
		b->size[b->ngroups++] = m;
	}
	free(taken);
}

void
sr_batch_free(struct sr_batch *b)
{
	free(b->order);
	free(b->size);
	memset(b, 0, sizeof *b);
}

const redisReply *
sr_batch_reply(const redisReply *rep, int j, int per)
{
	if (rep->type == REDIS_REPLY_ARRAY && (size_t)(per * j) < rep->elements)
		return rep->element[per * j];
	return rep;
}
