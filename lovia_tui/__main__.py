from lovia_tui.cli import main

raise SystemExit(main())
