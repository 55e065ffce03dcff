// Linux's epoll and eventfd, which the Glibc module does not expose: the
// HTTP server's event loops (EventLoop) and the PostgreSQL store's
// (PGEventLoop) wait on their sockets with them.
#include <sys/epoll.h>
#include <sys/eventfd.h>
