/*
 * The reference for bench/proxy: the least a TCP forwarder can do on this
 * machine. One thread per connection, blocking read() into a 256 KiB buffer
 * and write() of all of it to the other socket; no sessions, no counters, no
 * event loop. Built and run by bench/proxy/index.ts where gcc is present.
 *
 *   forwarder <listen-port> <target-port>   (both on 127.0.0.1)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUFFER (256 * 1024)

/* One connection: both sockets, closed by whichever direction finishes last. */
struct connection {
  int a, b;
  int directions;
};

struct pair {
  struct connection *c;
  int from, to;
};

static void *pump(void *arg) {
  struct pair *p = arg;
  char *buf = malloc(BUFFER);
  for (;;) {
    ssize_t n = read(p->from, buf, BUFFER);
    if (n <= 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(p->to, buf + done, n - done);
      if (w <= 0) goto out;
      done += w;
    }
  }
out:
  shutdown(p->to, SHUT_WR);
  if (__atomic_sub_fetch(&p->c->directions, 1, __ATOMIC_ACQ_REL) == 0) {
    close(p->c->a);
    close(p->c->b);
    free(p->c);
  }
  free(buf);
  free(p);
  return NULL;
}

static void start(struct connection *c, int from, int to) {
  struct pair *p = malloc(sizeof *p);
  p->c = c;
  p->from = from;
  p->to = to;
  pthread_t thread;
  pthread_create(&thread, NULL, pump, p);
  pthread_detach(thread);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: forwarder <listen-port> <target-port>\n");
    return 2;
  }
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  at.sin_port = htons(atoi(argv[1]));
  if (bind(listener, (struct sockaddr *)&at, sizeof at) != 0 || listen(listener, 64) != 0) {
    perror("listen");
    return 1;
  }
  printf("listening\n");
  fflush(stdout);
  for (;;) {
    int client = accept(listener, NULL, NULL);
    if (client < 0) continue;
    int target = socket(AF_INET, SOCK_STREAM, 0);
    at.sin_port = htons(atoi(argv[2]));
    if (connect(target, (struct sockaddr *)&at, sizeof at) != 0) {
      perror("connect");
      close(client);
      close(target);
      continue;
    }
    struct connection *c = malloc(sizeof *c);
    c->a = client;
    c->b = target;
    c->directions = 2;
    start(c, client, target);
    start(c, target, client);
  }
}
