"""Access control: who is calling (a Principal), what they may do (scopes) and where
(collections). Issue #10 fills in API keys, sessions, idempotency and the audit log."""
