"""Tools for the learner and the teacher (issue 22): running the course notebooks, learner and
solution builds, resetting a chapter, grading a folder of learners' notebooks, the glossary, slides
and the course site. Nothing here runs a kernel; the notebooks do."""
