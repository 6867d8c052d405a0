from ci_triage.cli import main

main()
