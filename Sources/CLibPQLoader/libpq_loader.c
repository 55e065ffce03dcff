// libpq, loaded when the PostgreSQL store is first used instead of linked:
// a `larder` that serves from disk (the default, the wheel, the npm
// package, the image) then runs where libpq and what it pulls in (OpenSSL,
// Kerberos, LDAP: about 16 MB) are not installed.
//
// This file defines every libpq function the store calls, under libpq's own
// names and prototypes (checked against <libpq-fe.h>), each forwarding to
// the function `larder_libpq_load` found with dlsym. The executable exports
// none of these names (no --export-dynamic), so libpq's calls inside itself
// still reach its own functions. Invariant: the store calls
// `larder_libpq_load` (ConnectionSettings) before any other function here.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "../CLibPQ/shim.h"
#include "libpq_loader.h"

// X(return type, name, (parameters), (arguments)): one line per function the store uses.
#define LARDER_LIBPQ_FUNCTIONS(X) \
    X(PGconn *, PQconnectStart, (const char *conninfo), (conninfo)) \
    X(PostgresPollingStatusType, PQconnectPoll, (PGconn *conn), (conn)) \
    X(void, PQfinish, (PGconn *conn), (conn)) \
    X(ConnStatusType, PQstatus, (const PGconn *conn), (conn)) \
    X(PGTransactionStatusType, PQtransactionStatus, (const PGconn *conn), (conn)) \
    X(char *, PQerrorMessage, (const PGconn *conn), (conn)) \
    X(int, PQsocket, (const PGconn *conn), (conn)) \
    X(int, PQsetnonblocking, (PGconn *conn, int arg), (conn, arg)) \
    X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *conn, PQnoticeProcessor proc, void *arg), (conn, proc, arg)) \
    X(PQconninfoOption *, PQconninfoParse, (const char *conninfo, char **errmsg), (conninfo, errmsg)) \
    X(void, PQconninfoFree, (PQconninfoOption *connOptions), (connOptions)) \
    X(void, PQfreemem, (void *ptr), (ptr)) \
    X(int, PQsendQueryParams, (PGconn *conn, const char *command, int nParams, const Oid *paramTypes, \
        const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat), \
        (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat)) \
    X(int, PQsendPrepare, (PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes), \
        (conn, stmtName, query, nParams, paramTypes)) \
    X(int, PQsendQueryPrepared, (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, \
        const int *paramLengths, const int *paramFormats, int resultFormat), \
        (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat)) \
    X(int, PQsendFlushRequest, (PGconn *conn), (conn)) \
    X(int, PQsetSingleRowMode, (PGconn *conn), (conn)) \
    X(int, PQenterPipelineMode, (PGconn *conn), (conn)) \
    X(int, PQexitPipelineMode, (PGconn *conn), (conn)) \
    X(int, PQpipelineSync, (PGconn *conn), (conn)) \
    X(int, PQflush, (PGconn *conn), (conn)) \
    X(int, PQconsumeInput, (PGconn *conn), (conn)) \
    X(int, PQisBusy, (PGconn *conn), (conn)) \
    X(PGresult *, PQgetResult, (PGconn *conn), (conn)) \
    X(PGnotify *, PQnotifies, (PGconn *conn), (conn)) \
    X(ExecStatusType, PQresultStatus, (const PGresult *res), (res)) \
    X(char *, PQresultErrorMessage, (const PGresult *res), (res)) \
    X(char *, PQresultErrorField, (const PGresult *res, int fieldcode), (res, fieldcode)) \
    X(int, PQntuples, (const PGresult *res), (res)) \
    X(int, PQnfields, (const PGresult *res), (res)) \
    X(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(int, PQgetlength, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(char *, PQcmdTuples, (PGresult *res), (res)) \
    X(void, PQclear, (PGresult *res), (res))

// The functions found, written once under `lock` before `loaded` is set.
#define LARDER_POINTER(type, name, params, args) static type (*real_##name) params;
LARDER_LIBPQ_FUNCTIONS(LARDER_POINTER)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;
static char message[1024];

int larder_libpq_load(const char **error) {
    pthread_mutex_lock(&lock);
    if (!loaded) {
        const char *named = getenv("LARDER_LIBPQ");
        const char *file = named && *named ? named : "libpq.so.5";
        // The search follows the executable's RPATH first: a packaged larder
        // (the wheel, the npm package) finds the libpq bundled beside it.
        void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            snprintf(message, sizeof message,
                     "the PostgreSQL store needs libpq, which did not load (%s); install it "
                     "(Debian and Ubuntu: apt-get install libpq5) or set LARDER_LIBPQ to the file",
                     dlerror());
        } else {
            const char *missing = NULL;
#define LARDER_FIND(type, name, params, args) \
            if (!missing && !(*(void **)&real_##name = dlsym(handle, #name))) missing = #name;
            LARDER_LIBPQ_FUNCTIONS(LARDER_FIND)
            if (missing) {
                snprintf(message, sizeof message,
                         "the PostgreSQL store needs libpq 14 or later: %s has no %s", file, missing);
                dlclose(handle);
            } else {
                loaded = 1;
            }
        }
    }
    int ok = loaded;
    pthread_mutex_unlock(&lock);
    if (!ok && error) *error = message;
    return ok ? 0 : -1;
}

// The forwarders. `real_*` is set before any call (the invariant above);
// a call before a successful load is a bug in the store, stopped here.
static void not_loaded(const char *name) {
    fprintf(stderr, "larder: %s called before libpq was loaded\n", name);
    abort();
}
#define LARDER_FORWARD(type, name, params, args) \
    type name params { \
        if (!real_##name) not_loaded(#name); \
        return real_##name args; \
    }
LARDER_LIBPQ_FUNCTIONS(LARDER_FORWARD)
