from gymgate.cli import main

raise SystemExit(main())
