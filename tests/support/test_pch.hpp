// Precompiled header of the multi-file GoogleTest programs: GoogleTest's header and the
// standard headers it pulls in are most of each test file's parse time. Only third-party
// headers belong here, so that a test file still has to include what it uses from the
// project (the programs also build without precompiled headers: -Db_pch=false). No
// include guard: the compiler reads it once, as the precompiled header (-include).
#include <gtest/gtest.h>
