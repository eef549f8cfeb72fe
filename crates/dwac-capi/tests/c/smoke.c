/* The C ABI over a real artifact: argv[1] the artifact, argv[2] a comma-separated token run
 * (a JSON document), argv[3] a token the grammar refuses after the first token of the run.
 * Prints two lines per step, "mask <step> <allowed tokens> <mask words, hex>" and "counters <step>
 * <undecided> <fallbacks> <reads> <masks> <undecided_total> <fallbacks_total>" (the
 * DwacMaskCounters after the fill), and the outcomes the Rust test compares with its own
 * matcher's, bit for bit; exits non-zero at the first broken expectation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwac.h"

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "line %d: ", __LINE__);                                  \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static size_t popcount(const uint32_t *m, size_t words) {
  size_t n = 0;
  for (size_t i = 0; i < words; i++) {
    uint32_t w = m[i];
    while (w) {
      w &= w - 1;
      n++;
    }
  }
  return n;
}

static int allowed(const uint32_t *m, uint32_t t) { return (m[t / 32] >> (t % 32)) & 1; }

/* One step's mask: its allowed-token count and every word of it. */
static void print_mask(size_t step, const uint32_t *m, size_t words) {
  printf("mask %zu %zu", step, popcount(m, words));
  for (size_t i = 0; i < words; i++)
    printf(" %08x", (unsigned)m[i]);
  printf("\n");
}

/* The matcher's counters after a fill; `fills` is how many fills it has had. */
static DwacMaskCounters print_counters(size_t step, const DwacMatcher *m, uint64_t fills) {
  DwacMaskCounters c;
  memset(&c, 0xff, sizeof c);
  CHECK(dwac_matcher_last_mask_counters(m, &c) == DWAC_STATUS_OK, "counters");
  CHECK(c.masks == fills, "step %zu: %llu masks counted, %llu filled", step, (unsigned long long)c.masks,
        (unsigned long long)fills);
  CHECK(c.fallbacks <= 1 && c.fallbacks_total <= c.masks, "fallbacks");
  printf("counters %zu %u %u %u %llu %llu %llu\n", step, c.undecided, c.fallbacks, c.reads,
         (unsigned long long)c.masks, (unsigned long long)c.undecided_total, (unsigned long long)c.fallbacks_total);
  return c;
}

int main(int argc, char **argv) {
  CHECK(argc == 4, "usage: smoke ARTIFACT TOKENS BAD");
  printf("version %s\n", dwac_version());

  uint32_t run[4096];
  size_t n = 0;
  for (char *p = strtok(argv[2], ","); p && n < 4096; p = strtok(NULL, ","))
    run[n++] = (uint32_t)strtoul(p, NULL, 10);
  uint32_t bad = (uint32_t)strtoul(argv[3], NULL, 10);

  /* Bad arguments: clear errors, never a crash; double free is ignored. */
  DwacError *err = NULL;
  DwacArtifact *a = NULL;
  CHECK(dwac_artifact_open(NULL, &a, &err) == DWAC_STATUS_INVALID_ARGUMENT, "null path accepted");
  CHECK(err && strlen(dwac_error_message(err)) > 0, "no message for a null path");
  dwac_error_free(err);
  dwac_error_free(err);
  dwac_error_free(NULL);
  CHECK(dwac_artifact_open("/nonexistent/x.dwa", &a, &err) == DWAC_STATUS_ARTIFACT, "missing file opened");
  printf("missing %s\n", dwac_error_message(err));
  dwac_error_free(err);
  const uint8_t junk[16] = "not an artifact";
  CHECK(dwac_artifact_from_bytes(junk, sizeof junk, &a, &err) == DWAC_STATUS_ARTIFACT, "junk opened");
  dwac_error_free(err);

  CHECK(dwac_artifact_open(argv[1], &a, &err) == DWAC_STATUS_OK, "open: %s", dwac_error_message(err));
  CHECK(err == NULL, "err not cleared on success");
  size_t vocab = dwac_artifact_vocab_size(a), words = dwac_artifact_mask_words(a);
  CHECK(words == (vocab + 31) / 32, "mask words");
  printf("vocab %zu\n", vocab);

  DwacMatcher *m = NULL;
  CHECK(dwac_matcher_new(a, &m, NULL) == DWAC_STATUS_OK, "matcher");
  /* The matcher keeps the tables alive after the artifact handle is released. */
  dwac_artifact_free(a);
  dwac_artifact_free(a);

  /* Counters: null arguments refused; all zero before the first fill. */
  DwacMaskCounters c;
  CHECK(dwac_matcher_last_mask_counters(NULL, &c) == DWAC_STATUS_INVALID_ARGUMENT, "null matcher counters");
  CHECK(dwac_matcher_last_mask_counters(m, NULL) == DWAC_STATUS_INVALID_ARGUMENT, "null counters out");
  CHECK(dwac_matcher_last_mask_counters(m, &c) == DWAC_STATUS_OK, "counters");
  CHECK(c.masks == 0 && c.reads == 0 && c.undecided_total == 0 && c.fallbacks_total == 0, "counters before a fill");

  /* Padded logits: two more words than the vocabulary needs. */
  size_t wide = words + 2;
  uint32_t *mask = malloc(wide * sizeof *mask);
  CHECK(dwac_matcher_fill_mask(m, mask, words - 1, &err) == DWAC_STATUS_BUFFER_TOO_SMALL, "short buffer");
  dwac_error_free(err);
  /* A failed fill counts nothing. */
  CHECK(dwac_matcher_last_mask_counters(m, &c) == DWAC_STATUS_OK && c.masks == 0, "a failed fill counted");
  CHECK(dwac_matcher_validate_tokens(m, run, n) == n, "the run does not validate");
  uint64_t undecided_sum = 0, reads_sum = 0;
  for (size_t i = 0; i < n; i++) {
    memset(mask, 0xff, wide * sizeof *mask);
    CHECK(dwac_matcher_fill_mask(m, mask, wide, NULL) == DWAC_STATUS_OK, "fill_mask");
    CHECK(mask[words] == 0 && mask[words + 1] == 0, "bits past the vocabulary");
    CHECK(allowed(mask, run[i]), "step %zu: token %u not in the mask", i, run[i]);
    print_mask(i, mask, words);
    c = print_counters(i, m, i + 1);
    undecided_sum += c.undecided;
    reads_sum += c.reads;
    CHECK(c.undecided_total == undecided_sum, "step %zu: undecided_total is not the sum", i);
    CHECK(!dwac_matcher_is_accepting(m) || i > 0, "accepting at the start");
    CHECK(dwac_matcher_commit(m, run[i], &err) == DWAC_STATUS_OK, "commit %zu: %s", i, dwac_error_message(err));
  }
  CHECK(dwac_matcher_fill_mask(m, mask, wide, NULL) == DWAC_STATUS_OK, "final mask");
  print_mask(n, mask, words);
  print_counters(n, m, n + 1);
  CHECK(reads_sum > 0, "no fill read the Parser DWA");
  printf("accepting %d terminated %d\n", dwac_matcher_is_accepting(m), dwac_matcher_is_terminated(m));

  /* Fork, roll the fork back to the start, reset the original: both at the start again. A fork
   * is a new matcher: its counters start from zero. */
  DwacMatcher *f = NULL;
  CHECK(dwac_matcher_clone(m, &f, NULL) == DWAC_STATUS_OK, "clone");
  CHECK(dwac_matcher_last_mask_counters(f, &c) == DWAC_STATUS_OK && c.masks == 0, "a fork's counters");
  CHECK(dwac_matcher_rollback(f, n + 1, &err) == DWAC_STATUS_ROLLBACK_TOO_FAR, "rolled back too far");
  printf("rollback %s\n", dwac_error_message(err));
  dwac_error_free(err);
  CHECK(dwac_matcher_rollback(f, n, NULL) == DWAC_STATUS_OK, "rollback");
  dwac_matcher_reset(m);
  uint32_t *mask2 = malloc(wide * sizeof *mask2);
  CHECK(dwac_matcher_fill_mask(m, mask, wide, NULL) == DWAC_STATUS_OK, "mask after reset");
  CHECK(dwac_matcher_fill_mask(f, mask2, wide, NULL) == DWAC_STATUS_OK, "mask after rollback");
  CHECK(memcmp(mask, mask2, wide * sizeof *mask) == 0, "reset and rollback disagree");
  /* Reset and rollback keep the totals: the original has had n + 2 fills, the fork one. */
  CHECK(dwac_matcher_last_mask_counters(m, &c) == DWAC_STATUS_OK && c.masks == n + 2, "masks after reset");
  CHECK(dwac_matcher_last_mask_counters(f, &c) == DWAC_STATUS_OK && c.masks == 1, "masks of the fork");

  /* A refused token leaves the matcher unchanged; a run stops at it. */
  CHECK(dwac_matcher_commit(m, run[0], NULL) == DWAC_STATUS_OK, "first token");
  CHECK(dwac_matcher_commit(m, bad, &err) == DWAC_STATUS_REJECTED, "bad token accepted");
  printf("rejected %s\n", dwac_error_message(err));
  dwac_error_free(err);
  CHECK(dwac_matcher_commit(m, (uint32_t)vocab, &err) == DWAC_STATUS_TOKEN_OUT_OF_RANGE, "out of range");
  dwac_error_free(err);
  dwac_matcher_reset(m);
  uint32_t with_bad[4097];
  with_bad[0] = run[0];
  with_bad[1] = bad;
  memcpy(with_bad + 2, run + 1, (n - 1) * sizeof *run);
  CHECK(dwac_matcher_validate_tokens(m, with_bad, n + 1) == 1, "validate stops at the bad token");
  size_t accepted = 99;
  CHECK(dwac_matcher_commit_tokens(m, with_bad, n + 1, &accepted, &err) == DWAC_STATUS_REJECTED, "run");
  CHECK(accepted == 1, "accepted %zu", accepted);
  dwac_error_free(err);
  CHECK(dwac_matcher_commit_tokens(m, run + 1, n - 1, &accepted, NULL) == DWAC_STATUS_OK, "rest of the run");
  CHECK(accepted == n - 1, "accepted %zu of the rest", accepted);

  uint32_t forced[8];
  size_t nf = 99;
  dwac_matcher_reset(m);
  CHECK(dwac_matcher_forced_tokens(m, forced, 8, &nf, NULL) == DWAC_STATUS_OK, "forced");
  printf("forced %zu\n", nf);

  /* Null handles: errors or no-ops. */
  CHECK(dwac_matcher_commit(NULL, 0, NULL) == DWAC_STATUS_INVALID_ARGUMENT, "null matcher");
  CHECK(!dwac_matcher_is_accepting(NULL) && dwac_artifact_vocab_size(NULL) == 0, "null queries");

  dwac_matcher_free(m);
  dwac_matcher_free(m);
  dwac_matcher_free(f);
  dwac_matcher_free(NULL);
  free(mask);
  free(mask2);
  printf("ok\n");
  return 0;
}
