"""The store of the audit trail and the advice: SQLite for one host, PostgreSQL for several (docs/store.md)."""
