/*
 * Running a test of this executable again as a child process, for what
 * only shows as a process ends (a report at exit, a file written at exit,
 * calls from an atexit handler). Include after harness.h.
 */
#ifndef XDAL_CONFORMANCE_CHILD_H
#define XDAL_CONFORMANCE_CHILD_H

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

/* Runs this executable's test `test` with the environment, less every
   variable whose name starts with `strip` (NULL: none), plus `env`; checks
   that it exits with status 0 and returns its stderr (malloc'ed), or NULL
   when it could not be run. */
static inline char *run_child(const char *test, const char *strip, const char *const *env, size_t nenv) {
  int pipe_fds[2];
  if (!CHECK(pipe(pipe_fds) == 0)) return NULL;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  size_t n = 0;
  while (environ[n]) n++;
  char **child_env = calloc(n + nenv + 1, sizeof *child_env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strip == NULL || strncmp(environ[i], strip, strlen(strip)) != 0) child_env[k++] = environ[i];
  for (size_t i = 0; i < nenv; i++) child_env[k++] = (char *)env[i];
  char exe[] = "/proc/self/exe";
  char *argv[] = {exe, (char *)test, NULL};
  pid_t pid;
  int spawned = posix_spawn(&pid, exe, &actions, NULL, argv, child_env);
  posix_spawn_file_actions_destroy(&actions);
  free(child_env);
  close(pipe_fds[1]);
  if (!CHECK_MSG(spawned == 0, "posix_spawn failed: %d", spawned)) {
    close(pipe_fds[0]);
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *text = malloc(cap);
  ssize_t got;
  while ((got = read(pipe_fds[0], text + len, cap - len - 1)) > 0) {
    len += (size_t)got;
    if (cap - len < 2) text = realloc(text, cap *= 2);
  }
  text[len] = '\0';
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child %s failed (status %d); its stderr:\n%s", test,
            status, text);
  return text;
}

/* Makes an empty temporary file (its path to `path`) and writes
   "<name>=<path>" into `env`, for a child's environment. Returns 0 if the
   file could not be made. */
static inline int temp_file_variable(char *path, size_t size, const char *name, char *env, size_t env_len) {
  if (!temp_file(path, size, "", 0)) return 0;
  snprintf(env, env_len, "%s=%s", name, path);
  return 1;
}

#endif /* XDAL_CONFORMANCE_CHILD_H */
