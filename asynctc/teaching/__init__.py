"""Tools for the learner and the teacher (issue 22): running the course notebooks, learner and
solution builds, resetting a chapter, grading a folder of learners' notebooks, the glossary, slides,
the course site, and the learner-time model (timing). Nothing here runs a kernel; the notebooks do."""
