"""Jobs on the fabric: where a job's ranks go (:mod:`.plan`), the fabric between them
(:mod:`.fabric`), and the files its collective libraries read (:mod:`.files`)."""
