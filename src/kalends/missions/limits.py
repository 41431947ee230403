"""Every bound the missions domain keeps, each with the seed section that names it.

Seed 002 is ``shared/seeds/002_5f0f0db2f372e4ed.txt``; seed 000 is
``shared/seeds/000_ed5ad16941b962a6.txt``.
"""

from __future__ import annotations

from datetime import timedelta

from kalends.civil import MAX_CALENDARS, MIN_EVERY_SECONDS

__all__ = [
    "MAX_CALENDARS",
    "MAX_COMMAND_ARGS",
    "MAX_CONDITION_ITEMS",
    "MAX_CONFIG_BYTES",
    "MAX_CONTROL_RECORDS",
    "MAX_GATE_RECORDS",
    "MAX_DOCUMENT_BYTES",
    "MAX_ENV_VARS",
    "MAX_INSTRUCTION_CHARS",
    "MAX_PAGE",
    "MAX_PREVIEW",
    "MAX_PROOF_COMMITS",
    "MAX_PROOF_SUBJECT_CHARS",
    "MAX_SOURCE_CHECKPOINTS",
    "MAX_SOURCE_FILE_BYTES",
    "MAX_REASON_BYTES",
    "MAX_REMEMBERED_CONVERSATIONS",
    "MAX_RESULTS",
    "MAX_SCHEDULES",
    "MAX_STORED_TITLE",
    "MAX_SUMMARY_BYTES",
    "MAX_TEMPLATE_ITEMS",
    "MAX_TITLE",
    "MAX_TOMBSTONES",
    "MAX_TOMBSTONE_BYTES",
    "MIN_EVERY_SECONDS",
    "MIN_REQUEST_ID",
    "ON_CHANGE_CHECK_MINUTES",
    "MAX_REQUEST_ID",
    "SOURCE_READ_BUDGET_SECONDS",
]

# Seed 002 "Daily schedule document and revision", ceilings: 64 schedules per project
# (a kalends workspace), a 64 KiB configuration and a 256 KiB document; beyond them the
# write is refused, never truncated.
MAX_SCHEDULES = 64
MAX_CONFIG_BYTES = 64 * 1024
MAX_DOCUMENT_BYTES = 256 * 1024
# Seed 002 "Daily schedule document and revision": result history bounded to 30 entries.
MAX_RESULTS = 30
# Seed 002 "Daily document controls": a schedule document keeps at most 64 control records.
MAX_CONTROL_RECORDS = 64
# Seed 002 "Daily schedule document and revision" (a 256 KiB document holding 30 results)
# and "Settlement, result and watched cursors" (settlement archives the result in the
# guarded document): kalends' decision is that a settlement must always fit, so the text a
# result keeps is bounded in the bytes the ceiling counts, the UTF-8 of its JSON string
# with escapes (``missions/stored_text.py``), whatever the alphabet. A summary over its
# bound is refused at report time; settlement cuts whatever it is given to fit. The only
# other text of a result is its reason, a short code kalends writes ("exit status 255",
# "signal 15", a runtime's error such as "lost"). Everything else a document keeps is
# fixed-width or bounded: the worst case, every part at its bound (every counter at 19
# digits, every instant with microseconds, every code 64 bytes, and the pending passage's
# frozen profile, a copy of the configuration's, counted as large as a whole
# configuration, which over-counts), in bytes:
#
#   configuration                                    MAX_CONFIG_BYTES =  65,536
#   body without results: 1,221 + a 65,536-byte frozen profile          66,757
#   30 results: 30 x (248 fixed + 256 reason + 3,584 summary) + 29 commas 122,669
#   document                                                           254,962
#
# under MAX_DOCUMENT_BYTES (262,144) by 7,182 bytes. Control records are rows of their
# own, outside the document. tests/missions/test_document_fits.py builds this document
# from the constants and checks it fits. 3,584 bytes is 3,584 ASCII characters, 896
# four-byte ones (an emoji).
MAX_SUMMARY_BYTES = 3584
MAX_REASON_BYTES = 256
# Seed 002 "Unified native schedules" (the scheduleList paragraph): at most eight
# documents per page.
MAX_PAGE = 8
# Seed 002 "Daily document product boundary": new titles follow the 1-60 title rule;
# stored schedules keep their 120-character bound.
MAX_TITLE = 60
MAX_STORED_TITLE = 120
# Seed 002 "Unified document foundation": the tombstone registry holds at most 4096
# entries and 1 MiB, and refuses further compaction at capacity.
MAX_TOMBSTONES = 4096
MAX_TOMBSTONE_BYTES = 1024 * 1024
# Seed 002 "Settlement, result and watched cursors": the whole start text fits the
# 16,384-character lifecycle input, so instructions (objective + notes) fit it too.
MAX_INSTRUCTION_CHARS = 16_384
# Seed 002 "Daily schedule document and revision": 64 remembered conversations; kalends
# bounds every list of a source condition (conversations, files) the same way.
MAX_CONDITION_ITEMS = 64
# Seed 002 "Daily schedule document and revision": "64 remembered conversations (watched
# plus cursor-retaining); beyond that ceiling the document is refused".
MAX_REMEMBERED_CONVERSATIONS = 64
# Seed 000 "Recurrence": a checklist re-created per occurrence holds at most 500 tasks;
# a passage's checklist template keeps the same bound.
MAX_TEMPLATE_ITEMS = 500

# Seed 002 "Local file and Git reads ... share a cancellable ten-second budget": every
# read of one observation of a source (and its revalidation) spends one such budget.
SOURCE_READ_BUDGET_SECONDS = 10
# Seed 002 "Event-only policies check every 15 minutes": the ``on-change`` policy reads its
# condition at this cadence from first Play.
ON_CHANGE_CHECK_MINUTES = 15

# kalends decisions (no seed names them): bounds on a runner profile and request IDs.
MAX_COMMAND_ARGS = 256
MAX_ARG_CHARS = 8192
MAX_ENV_VARS = 64
MAX_ENV_VALUE_CHARS = 8192
MIN_REQUEST_ID = 8
MAX_REQUEST_ID = 64
# How many slots a preview shows at most.
MAX_PREVIEW = 100
# The longest elapsed end bound: a century, the civil engine's search bound.
MAX_WITHIN = timedelta(days=36_525)
# A file of a ``files`` source larger than this is unreadable (the condition blocks with
# ``source-unreadable``), never digested in part.
MAX_SOURCE_FILE_BYTES = 64 * 1024 * 1024
# A ``git-branch`` proof lists at most this many commits between the baseline and the
# observed commit (and says when there were more), each subject cut to this many characters.
MAX_PROOF_COMMITS = 50
MAX_PROOF_SUBJECT_CHARS = 200
# A conditioned schedule keeps what its last slots decided (launched, skipped with the
# reason, blocked) as it keeps its results: the newest 30, beside them.
MAX_GATE_RECORDS = MAX_RESULTS
# Seed 002 "configuration retains removed source checkpoints": a document keeps the
# checkpoints of its current source and of the 7 sources removed most recently (a
# document's size stays bounded however often its condition is edited).
MAX_SOURCE_CHECKPOINTS = 8
