//! Cross-component end-to-end tests: the program on the embedded chain, the indexer and the
//! API together. They arrive with the chain and indexer; today the API's own integration tests
//! (`api/tests/api`) already run the real binary against real Postgres and Redis.
