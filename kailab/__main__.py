from kailab.cli import main

main()
