/* Whether the backend runs stream work synchronously, probed once:
   shared by the conformance tests whose work is held back by a gate. */
#ifndef XDAL_CONFORMANCE_SYNC_PROBE_H
#define XDAL_CONFORMANCE_SYNC_PROBE_H

#include "harness.h"

/* Work held back by a gate needs a backend that runs stream work
   asynchronously. A backend may instead run each piece of work inside the
   call that enqueues it (examples/minimal_backend does: its
   launch_host_func calls the function at once), so that work is never
   pending and XDAL_ERROR_NOT_READY never happens. A gated host function
   there would block the enqueuing thread itself, so on such a backend the
   gated tests check the synchronous contract instead: the work, and all
   work enqueued before it, is complete when the enqueuing call returns,
   and queries say so.

   The probe: a host function enqueued on a new stream notes whether it ran
   on this thread before xdal_launch_host_func returned. (A backend that
   defers work to a later synchronize on the caller's thread is not
   synchronous in this sense: the launch has returned by then.) The fake
   backend runs work on its executor threads and must never look
   synchronous. */
static struct {
  pthread_t caller;
  atomic_int launch_returned;
  atomic_int ran_inline;
} sync_probe;

static void sync_probe_fn(void *arg) {
  (void)arg;
  if (pthread_equal(pthread_self(), sync_probe.caller) && !atomic_load(&sync_probe.launch_returned))
    atomic_store(&sync_probe.ran_inline, 1);
}

static int backend_runs_work_synchronously(void) {
  static int answer = -1;
  if (answer >= 0) return answer;
  xdal_stream_t s = NULL;
  if (!CHECK_OK(xdal_stream_create(&s, XDAL_STREAM_DEFAULT, 0))) return 0;
  sync_probe.caller = pthread_self();
  atomic_store(&sync_probe.launch_returned, 0);
  atomic_store(&sync_probe.ran_inline, 0);
  CHECK_OK(xdal_launch_host_func(s, sync_probe_fn, NULL));
  atomic_store(&sync_probe.launch_returned, 1);
  CHECK_OK(xdal_stream_synchronize(s));
  CHECK_OK(xdal_stream_destroy(s));
  answer = atomic_load(&sync_probe.ran_inline);
  if (backend_is_fake()) CHECK_MSG(!answer, "the fake backend ran a host function inside xdal_launch_host_func");
  return answer;
}

/* Prints why a gated test checks the synchronous contract instead. */
static void note_synchronous(void) {
  printf("    note: the %s backend runs stream work synchronously (inside the call that enqueues it): "
         "nothing can be pending, so this test checks that the work is complete when that call returns\n",
         xdal_backend_name());
}

#endif
