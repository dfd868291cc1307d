/* admit.c - sr-gwsim's admission of a call by its account: at most --qps
 * arrivals, counted in any sliding second, per calendar second or as a
 * token bucket (--rate-mode), and at most --max-inflight calls at once.
 * A refused arrival is not counted.
 */
#include <stdlib.h>
#include <string.h>

#include "gwsim.h"

const char *const rate_mode_name[] = { "sliding", "fixed", "bucket" };

/* An account's rate, in the mode in force, and its calls in flight. */
struct account {
	char id[65];
	int64_t *arrivals; /* sliding: ring of admitted arrival times */
	long head, len, cap;
	int64_t second;    /* fixed: the calendar second counted */
	long count;
	double tokens;     /* bucket: what is left, refilled at qps per second */
	int64_t refilled;
	long inflight;
};

static struct account *accounts;
static int naccounts;

/* Find or add an account (caller holds mu). A few accounts per run: a list. */
static struct account *
account_get(const char *id)
{
	struct account *a;

	for (int i = 0; i < naccounts; i++)
		if (!strcmp(accounts[i].id, id))
			return &accounts[i];
	accounts = sr_realloc(accounts, (size_t)(naccounts + 1) * sizeof *accounts);
	a = &accounts[naccounts++];
	memset(a, 0, sizeof *a);
	snprintf(a->id, sizeof a->id, "%s", id);
	a->refilled = -1; /* a new bucket starts full */
	return a;
}

/* At most qps arrivals in any 1000 ms. The ring holds the admitted ones and
 * grows when /_sim/set raises qps. */
static int
admit_sliding(struct account *a, int64_t t)
{
	if (a->cap < qps) {
		int64_t *ring = sr_malloc((size_t)qps * sizeof *ring);

		for (long i = 0; i < a->len; i++)
			ring[i] = a->arrivals[(a->head + i) % a->cap];
		free(a->arrivals);
		a->arrivals = ring;
		a->head = 0;
		a->cap = qps;
	}
	while (a->len > 0 && a->arrivals[a->head] <= t - 1000) {
		a->head = (a->head + 1) % a->cap;
		a->len--;
	}
	if (a->len >= qps)
		return 0;
	a->arrivals[(a->head + a->len++) % a->cap] = t;
	return 1;
}

/* At most qps arrivals per calendar second: a burst across a second's
 * boundary gets twice the rate through, which a client must not count on.
 * An arrival stamped a little before the counted second (threads race to
 * the lock) is counted in it. */
static int
admit_fixed(struct account *a, int64_t t)
{
	if (t / 1000 > a->second) {
		a->second = t / 1000;
		a->count = 0;
	}
	if (a->count >= qps)
		return 0;
	a->count++;
	return 1;
}

/* A token bucket of --burst tokens refilled at qps per second. */
static int
admit_bucket(struct account *a, int64_t t)
{
	double cap = burst >= 0 ? (double)burst : (double)qps;

	if (a->refilled < 0) {
		a->tokens = cap;
		a->refilled = t;
	} else if (t > a->refilled) {
		a->tokens += (double)(t - a->refilled) * (double)qps / 1000;
		a->refilled = t;
	}
	if (a->tokens > cap)
		a->tokens = cap;
	if (a->tokens < 1)
		return 0;
	a->tokens -= 1;
	return 1;
}

/* Admit one arrival of the account: NULL, or why it is refused. A refused
 * arrival is not counted in the rate; an admitted one is in flight until
 * release() (caller holds mu). Accounts are kept only when something is
 * counted. */
const char *
admit(const char *carrier, int64_t t)
{
	struct account *a;
	int ok = 1;

	if (qps <= 0 && max_inflight <= 0)
		return NULL;
	a = account_get(carrier);
	if (max_inflight > 0 && a->inflight >= max_inflight)
		return "inflight";
	if (qps > 0) {
		switch (rate_mode) {
		case RM_SLIDING: ok = admit_sliding(a, t); break;
		case RM_FIXED: ok = admit_fixed(a, t); break;
		case RM_BUCKET: ok = admit_bucket(a, t); break;
		}
	}
	if (!ok)
		return "qps";
	if (max_inflight > 0)
		a->inflight++;
	return NULL;
}

void
release(const char *carrier)
{
	if (max_inflight <= 0)
		return;
	pthread_mutex_lock(&mu);
	account_get(carrier)->inflight--;
	pthread_mutex_unlock(&mu);
}

void
accounts_free(void)
{
	for (int i = 0; i < naccounts; i++)
		free(accounts[i].arrivals);
	free(accounts);
}
