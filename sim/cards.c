/* cards.c - sr-gwsim's cards: each one's state, the state to come and
 * its last change, in an open-addressing table by id; --cards loads the
 * states a run starts with. Every card not loaded starts active, added
 * when first asked about.
 */
#include <stdlib.h>
#include <string.h>

#include "gwsim.h"

const char *const state_name[] = { "active", "stopped", "retired" };

static struct card *cards;
static size_t ncards, capcards; /* open addressing, capcards a power of two */

/* A state by its name, or -1. */
static int
state_parse(const char *s)
{
	for (int i = ST_ACTIVE; i <= ST_RETIRED; i++)
		if (!strcmp(s, state_name[i]))
			return i;
	return -1;
}

static size_t
hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/* Find or add a card (caller holds mu). */
struct card *
card_get(const char *id, const char *carrier)
{
	size_t i;

	if ((ncards + 1) * 2 > capcards) {
		struct card *old = cards;
		size_t oldcap = capcards;

		capcards = capcards ? capcards * 2 : 1024;
		cards = sr_malloc(capcards * sizeof *cards);
		memset(cards, 0, capcards * sizeof *cards);
		for (size_t k = 0; k < oldcap; k++)
			if (old[k].id[0]) {
				for (i = hash(old[k].id) & (capcards - 1); cards[i].id[0]; i = (i + 1) & (capcards - 1))
					;
				cards[i] = old[k];
			}
		free(old);
	}
	for (i = hash(id) & (capcards - 1); cards[i].id[0]; i = (i + 1) & (capcards - 1))
		if (!strcmp(cards[i].id, id))
			return &cards[i];
	snprintf(cards[i].id, sizeof cards[i].id, "%s", id);
	snprintf(cards[i].carrier, sizeof cards[i].carrier, "%s", carrier);
	ncards++;
	return &cards[i];
}

void
load_cards(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	long n = 0;
	int state;
	struct card *k;

	if (!f)
		sr_die(SR_EX_USAGE, "--cards: cannot open '%s':", path);
	while (fgets(line, sizeof line, f)) {
		json_t *j = json_loads(line, 0, NULL);
		const char *id = j ? sr_jstr(j, "card") : NULL, *st = j ? sr_jstr(j, "status") : NULL;

		n++;
		if (!sr_valid_id(id))
			sr_die(SR_EX_USAGE, "--cards: line %ld: missing or bad \"card\"", n);
		if ((state = st ? state_parse(st) : ST_ACTIVE) < 0)
			sr_die(SR_EX_USAGE, "--cards: line %ld: unknown \"status\" '%s'", n, st);
		k = card_get(id, sr_jstr(j, "carrier") ? sr_jstr(j, "carrier") : "");
		k->state = k->will = (enum state)state;
		json_decref(j);
	}
	fclose(f);
}

void
cards_free(void)
{
	free(cards);
}
